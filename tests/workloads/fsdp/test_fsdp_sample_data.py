"""The generated text-to-SQL set and its tokenizer stand in for gretel's set and Llama 3.1's tokenizer."""

from __future__ import annotations

import statistics

import pytest
from llama_models.llama3.tokenizer import Tokenizer

from workloads.fsdp.data import encode_sample, to_messages
from workloads.fsdp.llama3_vocab import bpe_tokens_formed
from workloads.fsdp.sample_data import CARD_RECORDS, CARD_SQL_TOKENS, generate_samples
from workloads.fsdp.tiny import build_tokenizer


@pytest.fixture(scope="module")
def llama3() -> Tokenizer:
    return Tokenizer.get_instance()


def llama3_pieces(llama3: Tokenizer, text: str) -> list[str]:
    return [llama3.decode([token]) for token in llama3.encode(text, bos=False, eos=False, allowed_special="all")]


def test_sql_tokens_per_record_match_the_dataset_card(llama3):
    samples = generate_samples(2000, seed=3)
    per_record = statistics.mean(
        len(llama3.encode(s["sql_context"] + " " + s["sql"], bos=False, eos=False)) for s in samples
    )
    assert per_record == pytest.approx(CARD_SQL_TOKENS / CARD_RECORDS, rel=0.10)


def test_the_stand_in_tokenizer_splits_the_set_exactly_as_llama3(llama3):
    samples = generate_samples(300, seed=0)
    tokenizer = build_tokenizer(samples)
    assert len(tokenizer) < 3000  # a tiny model's vocabulary, not Llama 3's 128k
    for sample in samples:
        ids = encode_sample(tokenizer, sample)
        rendered = tokenizer.apply_chat_template(to_messages(sample), tokenize=False)
        assert [tokenizer.decode([token]) for token in ids] == llama3_pieces(llama3, rendered)


def test_text_it_never_saw_still_round_trips():
    tokenizer = build_tokenizer(generate_samples(20, seed=0))
    text = "Überweisungen über 1.234,56 € — zählen? ✓"
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text


def test_bpe_records_each_merge_on_the_way():
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"abc": 4}
    assert bpe_tokens_formed(b"abcab", ranks) == {b"a", b"b", b"c", b"ab", b"abc"}
    assert bpe_tokens_formed(b"abc", ranks) == {b"abc"}  # a whole piece in the vocabulary is taken as it is
