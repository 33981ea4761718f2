"""Llama 3's own tokenizer, cut down to the tokens a corpus needs: exact Llama 3 token counts, a tiny vocabulary.

The Llama 3 BPE ranks ship in the ``llama-models`` package (PyPI), so this works offline. A model with its
128,256-entry vocabulary would spend nearly all of a tiny model's compute in the output layer; keeping only
the single bytes plus every token that Llama 3's BPE forms (finally or on the way) while encoding the corpus
gives the identical tokenization of that corpus with a few thousand entries. Other text still encodes, into
shorter tokens.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|finetune_right_pad_id|>",
]


def llama3_ranks() -> dict[bytes, int]:
    from tiktoken.load import load_tiktoken_bpe

    spec = importlib.util.find_spec("llama_models")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the Llama 3 tokenizer ships in the llama-models package: pip install llama-models")
    return load_tiktoken_bpe(str(Path(spec.submodule_search_locations[0]) / "llama3" / "tokenizer.model"))


def llama3_pattern() -> str:
    from llama_models.llama3.tokenizer import Tokenizer

    return Tokenizer.pat_str


def bpe_tokens_formed(piece: bytes, ranks: dict[bytes, int]) -> set[bytes]:
    """Every token tiktoken's BPE produces for ``piece``: the final ones and each merge on the way."""
    if piece in ranks:
        return {piece}  # tiktoken takes a whole piece in the vocabulary as it is, without merging
    parts = [bytes([byte]) for byte in piece]
    formed = set(parts)
    while len(parts) > 1:
        candidates = [
            (ranks[parts[i] + parts[i + 1]], i) for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks
        ]
        if not candidates:
            break
        _, i = min(candidates)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        formed.add(parts[i])
    return formed


def restricted_ranks(texts: Iterable[str], ranks: dict[bytes, int], pattern: str) -> dict[bytes, int]:
    """The single bytes plus every token formed on ``texts``, renumbered densely in Llama 3's rank order."""
    import regex

    splitter = regex.compile(pattern)
    pieces = {match.encode() for text in texts for match in splitter.findall(text)}
    kept = {bytes([byte]) for byte in range(256)}
    for piece in pieces:
        kept |= bpe_tokens_formed(piece, ranks)
    return {token: new_rank for new_rank, token in enumerate(sorted(kept, key=ranks.__getitem__))}


def rendered_segments(conversations: Iterable[list[dict[str, str]]], chat_template: str) -> Iterable[str]:
    """The text between special tokens of each rendered conversation: what the BPE actually sees."""
    import re

    import jinja2

    template = jinja2.Environment().from_string(chat_template)
    specials = re.compile("|".join(re.escape(token) for token in SPECIAL_TOKENS))
    for messages in conversations:
        yield from specials.split(template.render(messages=messages, bos_token=SPECIAL_TOKENS[0]))


def corpus_tokenizer(conversations: Iterable[list[dict[str, str]]], chat_template: str):
    """A ``PreTrainedTokenizerFast`` that tokenizes these conversations exactly as Llama 3 does."""
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = restricted_ranks(rendered_segments(conversations, chat_template), llama3_ranks(), llama3_pattern())

    class RestrictedConverter(TikTokenConverter):
        def load_tiktoken_bpe(self, _url: str) -> dict[bytes, int]:
            return ranks

    backend = RestrictedConverter(
        vocab_file="restricted", pattern=llama3_pattern(), extra_special_tokens=SPECIAL_TOKENS
    ).converted()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|begin_of_text|>",
        eos_token="<|end_of_text|>",
        pad_token="<|finetune_right_pad_id|>",
    )
    tokenizer.chat_template = chat_template
    return tokenizer
