"""Read a project's Pulumi.yaml and Pulumi.<stack>.yaml the way the CLI hands them to a program.

The Pulumi CLI reads them with Go's YAML (gopkg.in/yaml.v3): YAML 1.2 core rules, so `yes` and `on` are strings
and `2:00:00` is not a number, and a key given twice is an error. PyYAML reads YAML 1.1 and keeps the last of
two keys, so preflight reads stack files with ruamel.yaml's YAML 1.2 loader, which refuses duplicates too
(docs/architecture.md: stack files). Aliases are shared, not copied, when loaded; a file whose aliases would
expand past MAX_EXPANDED_NODES values (a "billion laughs" file) is refused before anything walks it; so are text
that is not UTF-8 (or UTF-16 with its mark), values nested past what the parser follows, and a config key that is
not a name. Each is one line (StackFileError), never a traceback.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.constructor import DuplicateKeyError, SafeConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from components.facts.secrets import looks_like_a_secret, masked, names_a_secret
from preflight.engine.mocks import SECRET_PLACEHOLDER

# Far above any real stack file (the dev stack's config is a few hundred values), far below what hangs a run.
MAX_EXPANDED_NODES = 100_000


class StackFileError(Exception):
    """The project or stack file is missing or malformed."""


@dataclass(frozen=True)
class StackFiles:
    project: str
    main: Path
    config: dict[str, str]  # key -> value as the engine passes it (objects as JSON text)
    secret_keys: list[str]


def find_project_dir(start: Path) -> Path:
    for folder in (start, *start.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise StackFileError(f"no Pulumi.yaml in {start} or any folder above it")


def _text(path: Path) -> str:
    """The file as text: UTF-8, or UTF-16 with its byte-order mark (the two encodings YAML and yaml.v3 read)."""
    data = path.read_bytes()
    encoding = "utf-16" if data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        raise StackFileError(
            f"{path.name}: byte {error.start} is not {encoding.upper().removesuffix('-SIG')} text "
            "(allowed: a UTF-8 text file)"
        ) from None


def go_yaml_number(text: str) -> int | float:
    """A plain scalar YAML tags as an integer, read as gopkg.in/yaml.v3 (v3.0.1 resolve.go) reads it: underscores
    dropped, then Go's strconv.ParseInt with base 0, where a leading 0 is octal (`010` is 8) and 0x, 0o, 0b are
    hex, octal and binary; what that refuses (`08`) becomes a float, as yaml.v3 falls back to ParseFloat."""
    plain = text.replace("_", "")
    sign, digits = (-1, plain[1:]) if plain[:1] == "-" else (1, plain.lstrip("+"))
    try:
        if digits[:2].lower() in ("0x", "0o", "0b"):
            return sign * int(digits, 0)
        return sign * int(digits, 8 if len(digits) > 1 and digits.startswith("0") else 10)
    except ValueError:
        return float(plain)


class PulumiCliConstructor(SafeConstructor):
    """ruamel's YAML 1.2 safe loader, but numbers and dates as the Pulumi CLI's Go YAML reads them."""

    def construct_yaml_int(self, node: Any) -> int | float:
        return go_yaml_number(str(self.construct_scalar(node)))

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> str:
        # yaml.v3 makes an unquoted date a time.Time, which the CLI hands the program as text; kept as the text
        # written, it is a string like any other (and never a value JSON cannot carry).
        return str(self.construct_scalar(node))


PulumiCliConstructor.add_constructor("tag:yaml.org,2002:int", PulumiCliConstructor.construct_yaml_int)
PulumiCliConstructor.add_constructor("tag:yaml.org,2002:timestamp", PulumiCliConstructor.construct_yaml_timestamp)


def _loader() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.Constructor = PulumiCliConstructor
    return yaml


def stack_names(project_dir: Path) -> list[str]:
    """The stacks a project folder has a file for: Pulumi.<stack>.yaml."""
    return sorted(path.name[len("Pulumi.") : -len(".yaml")] for path in project_dir.glob("Pulumi.?*.yaml"))


# The YAML parser's words for the mistakes people make in a stack file, in plain words (the parser's kept after).
_PLAIN = (
    (
        "mapping values are not allowed",
        "a `key: value` where none can start: indent it under a key, or quote a value that holds ': '",
    ),
    (
        "expected <block end>",
        (
            "this line's indentation does not match the lines above it (a key beside a list item, or "
            "one space too many or too few)"
        ),
    ),
    ("expected ',' or ']'", "a `[` list is never closed with `]`"),
    ("expected ',' or '}'", "a `{` mapping is never closed with `}`"),
    ("found character '\\t'", "a tab: YAML indents with spaces only"),
    ("could not find expected ':'", "a line that is neither `key: value` nor `- item`"),
    ("found undefined alias", "a `*name` with no `&name` before it"),
)


def plain_words(problem: str) -> str:
    for start, words in _PLAIN:
        if problem.startswith(start):
            return f"{words} (YAML: {problem})"
    return f"{problem} (not valid YAML)"


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise StackFileError(f"{path} does not exist")
    try:
        data = _loader().load(_text(path)) or {}
    except RecursionError:
        nested = f"{path.name}: values nested too deeply to read (allowed: a stack file's config)"
        raise StackFileError(nested) from None
    except DuplicateKeyError as error:
        raise StackFileError(_duplicate_key(path, error)) from None
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path.name}:{mark.line + 1}:{mark.column + 1}" if mark else path.name
        raise StackFileError(f"{where}: {plain_words(str(error.problem or error.context))}") from None
    except YAMLError as error:
        raise StackFileError(f"{path.name}: {error} (not valid YAML)") from None
    if not isinstance(data, dict):
        raise StackFileError(f"{path} is not a YAML mapping")
    if _expanded_nodes(data) > MAX_EXPANDED_NODES:
        raise StackFileError(
            f"{path.name}: its aliases expand to more than {MAX_EXPANDED_NODES:,} values (allowed: a stack file "
            "without alias bombs)"
        )
    return data


def _duplicate_key(path: Path, error: DuplicateKeyError) -> str:
    mark, first = error.problem_mark, error.context_mark
    key = str(error.problem).split('"')[1] if '"' in str(error.problem) else "?"
    where = f"{path.name}:{mark.line + 1}:{mark.column + 1}" if mark else path.name
    before = f" (in the mapping at line {first.line + 1})" if first else ""
    return f'{where}: duplicate key "{key}"{before}: the Pulumi CLI refuses it (allowed: each key once)'


def _expanded_nodes(data: Any) -> int:
    """How many values the document holds with every alias expanded, counting no further than the limit."""
    count, pending = 0, [data]
    while pending and count <= MAX_EXPANDED_NODES:
        value = pending.pop()
        count += 1
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return count


def _engine_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _refuse_a_secret_in_clear(stack: str, key: str, text: str) -> None:
    """A provider's credential (gcp:credentials, gcp:accessToken) or any other key that names a secret or holds a
    token, written in clear text: it would sit unencrypted in the stack file, its history and the state."""
    name = key.partition(":")[2]
    if text and (names_a_secret(name) or looks_like_a_secret(text)):
        shown = masked(text)
        raise StackFileError(
            f"Pulumi.{stack}.yaml: {key} is set in clear text ({shown}); set it as a secret instead: "
            f"`pulumi config set --secret {key} ...` (allowed: secrets only as secure values)"
        )


def _refuse_config_outside_config(stack: str, stack_file: dict) -> None:
    """A `<namespace>:<key>` at the top of a stack file (its `config:` line forgotten or mis-indented): the Pulumi CLI
    reads config only under `config:`, so the value would be silently ignored and its default deployed."""
    for key in stack_file:
        if isinstance(key, str) and ":" in key:
            raise StackFileError(
                f"Pulumi.{stack}.yaml: {key} is outside config:, where the Pulumi CLI never reads it "
                "(allowed: under config:, indented, as `pulumi config set` writes it)"
            )


def read_stack_files(project_dir: Path, stack: str) -> StackFiles:
    project = _read_yaml(project_dir / "Pulumi.yaml")
    stack_path = project_dir / f"Pulumi.{stack}.yaml"
    if not stack_path.is_file():
        stacks = ", ".join(stack_names(project_dir)) or "none: copy Pulumi.dev.yaml to start one"
        raise StackFileError(f"{stack_path} does not exist (stacks here: {stacks})")
    stack_file = _read_yaml(stack_path)
    name = project.get("name")
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    _refuse_config_outside_config(stack, stack_file)
    values = stack_file.get("config") or {}
    if not isinstance(values, dict):
        kind = "list" if isinstance(values, list) else type(values).__name__
        raise StackFileError(f"Pulumi.{stack}.yaml: config is a {kind} (allowed: a mapping of keys to values)")
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise StackFileError(
                f"Pulumi.{stack}.yaml: config key {json.dumps(key, default=repr)} is not a name "
                "(allowed: <namespace>:<name>, or <name> in the project's namespace)"
            )
        full_key = key if ":" in key else f"{name}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            if not isinstance(value["secure"], str) or not value["secure"]:
                raise StackFileError(
                    f"Pulumi.{stack}.yaml: {full_key}: secure: {json.dumps(value['secure'], default=repr)} is not "
                    "ciphertext the Pulumi CLI can decrypt (allowed: what `pulumi config set --secret` writes)"
                )
            # Encrypted values cannot be read offline; the program sees a placeholder.
            config[full_key] = SECRET_PLACEHOLDER
            secret_keys.append(full_key)
        else:
            config[full_key] = _engine_text(value)
            if not full_key.startswith(f"{name}:"):  # the project's own keys are typed and checked at config load
                _refuse_a_secret_in_clear(stack, full_key, config[full_key])
    main = project_dir / str(project.get("main", ".")) / "__main__.py"
    return StackFiles(project=name, main=main, config=config, secret_keys=secret_keys)
