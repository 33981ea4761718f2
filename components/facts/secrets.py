"""What a credential looks like: the one pattern the config checks and the policy pack both refuse in clear text.

No Pulumi and no third-party import: the pack's own venv imports this module too.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

# Tokens as their issuers print them: Hugging Face's (hf_ and 34 letters or digits), GitHub's, Google API keys,
# Slack's; AWS access key ids; PEM private keys. The issuer's prefix is kept when a value is shown masked.
SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9])(?P<prefix>hf_|gh[pousr]_|github_pat_|AIza|xox[abprs]-)[A-Za-z0-9_-]{20,}"
    r"|(?<![A-Za-z0-9])(?P<aws>AKIA)[0-9A-Z]{16}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)
# A key whose last word names a secret: hf_access_token, hub-token, api_secret, password, HF_TOKEN (not
# tokenizer-id, and not MaxText's num_moe_token_chunks, which only count tokens).
SECRET_WORDS = frozenset({"token", "secret", "password", "passwd", "credential", "credentials", "apikey"})
_SECRET_WORD_PAIRS = (["api", "key"], ["private", "key"])


def names_a_secret(key: str) -> bool:
    """Whether a key (a flag, an env variable, a config key) names a secret by its last word."""
    words = re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).lower())
    return bool(words) and (words[-1] in SECRET_WORDS or words[-2:] in _SECRET_WORD_PAIRS)


# A run of base64 long enough to wrap the shortest token above (AKIA and 16: 20 characters, 28 encoded).
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{28,}={0,2}")


def _unwrapped(value: str) -> Iterator[str]:
    """The text of each base64 run in `value` that decodes to UTF-8: a token wrapped once to hide it."""
    for run in _BASE64_RUN.findall(value):
        try:
            yield base64.b64decode(run + "=" * (-len(run) % 4), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue


def looks_like_a_secret(value: str) -> bool:
    """A token as its issuer prints it, also base64-wrapped once (`aGZf...` for `hf_...`)."""
    return bool(SECRET_VALUE.search(value)) or any(SECRET_VALUE.search(text) for text in _unwrapped(value))


def masked(value: str) -> str:
    """The value with each token cut to its issuer's prefix ("hf_…"); all of it when only the key says secret."""
    shown = SECRET_VALUE.sub(lambda match: (match.group("prefix") or match.group("aws") or "") + "…", value)
    return shown if shown != value else "…"


def is_secret_argument(key: str, value: str) -> bool:
    """A key=value pair that carries a secret: a token-looking value, or any value under a secret's name."""
    return bool(looks_like_a_secret(value) or (value and names_a_secret(key)))


# A value that only counts or switches: MaxText's num_moe_token_chunks=4 names the word but holds no secret.
PLAIN_COUNT = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?|true|false", re.IGNORECASE)


def carries_a_secret(key: str, value: str) -> bool:
    """A token-looking value, or a key with a secret's word anywhere in it (hub_token_file, token_hf, api_secret_path:
    `*token*`), unless its value is a plain number or boolean."""
    if is_secret_argument(key, value):
        return True
    words = re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).lower())
    return not PLAIN_COUNT.fullmatch(value) and any(is_secret_argument(word, value) for word in words)
