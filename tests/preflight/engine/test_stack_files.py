"""Stack files read as the Pulumi CLI reads them: YAML 1.2 core, a key given twice refused, alias bombs bounded."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from preflight.engine.stack_files import MAX_EXPANDED_NODES, StackFileError, read_stack_files


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: trainyard\nruntime: python\n")
    return tmp_path


def read(project: Path, text: str) -> dict[str, str]:
    (project / "Pulumi.s.yaml").write_text(text)
    return read_stack_files(project, "s").config


def test_values_are_what_yaml_1_2_makes_of_them_as_the_cli_hands_them_over(project):
    # PyYAML (YAML 1.1) would make 7200 and True of these; Go's yaml.v3 in the CLI keeps the strings.
    config = read(
        project, "config:\n  trainyard:a: 2:00:00\n  trainyard:b: yes\n  trainyard:c: on\n  trainyard:d: 12\n"
    )
    assert config == {"trainyard:a": "2:00:00", "trainyard:b": "yes", "trainyard:c": "on", "trainyard:d": "12"}


@pytest.mark.parametrize(
    ("text", "where", "key"),
    [
        ("config:\n  trainyard:zone: a\n  trainyard:zone: b\n", "Pulumi.s.yaml:3:3", "trainyard:zone"),
        (
            "config:\n  trainyard:tpuSlices:\n    - name: v6e\n      count: 2\n      count: 20\n",
            "Pulumi.s.yaml:5:7",
            "count",
        ),
    ],
)
def test_a_key_given_twice_is_refused_naming_file_line_and_key(project, text, where, key):
    with pytest.raises(StackFileError) as refused:
        read(project, text)
    assert str(refused.value).startswith(f'{where}: duplicate key "{key}" (in the mapping at line ')


def test_an_alias_bomb_is_refused_in_well_under_a_second(project):
    levels = ["  l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10**9 values
    start = time.perf_counter()
    with pytest.raises(StackFileError, match=f"expand to more than {MAX_EXPANDED_NODES:,} values"):
        read(project, "config:\n" + "\n".join(levels) + "\n")
    assert time.perf_counter() - start < 1.0


def test_an_alias_used_a_few_times_is_fine(project):
    text = "config:\n  trainyard:a: &shared {x: 1}\n  trainyard:b: *shared\n"
    assert read(project, text) == {"trainyard:a": '{"x": 1}', "trainyard:b": '{"x": 1}'}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ("config:\n  trainyard:a: Caf\u00e9\n".encode("latin-1"), "Pulumi.s.yaml: byte 26 is not UTF-8 text"),
        (b"config:\n  trainyard:a: \xff\xfe\n", "Pulumi.s.yaml: byte 23 is not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_utf8_is_refused_in_one_line(project, data, words):
    (project / "Pulumi.s.yaml").write_bytes(data)
    with pytest.raises(StackFileError, match=f"^{words} \\(allowed: a UTF-8 text file\\)$"):
        read_stack_files(project, "s")


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_utf8_with_a_byte_order_mark_and_utf16_read_as_yaml_v3_reads_them(project, encoding):
    (project / "Pulumi.s.yaml").write_bytes("config:\n  trainyard:a: Caf\u00e9\n".encode(encoding))
    assert read_stack_files(project, "s").config == {"trainyard:a": "Caf\u00e9"}


def test_values_nested_past_what_the_parser_can_follow_are_refused_in_one_line(project):
    with pytest.raises(StackFileError, match="^Pulumi.s.yaml: values nested too deeply to read"):
        read(project, "config:\n  trainyard:a: " + "[" * 5000 + "]" * 5000 + "\n")


@pytest.mark.parametrize(("key", "shown"), [("1", "1"), ("~", "null"), ("true", "true"), ("''", '""')])
def test_a_config_key_that_is_not_a_name_is_refused_naming_it(project, key, shown):
    with pytest.raises(StackFileError, match=f"^Pulumi.s.yaml: config key {shown} is not a name "):
        read(project, f"config:\n  trainyard:a: x\n  {key}: 2\n")


@pytest.mark.parametrize(("secure", "shown"), [("123", "123"), ('""', '""'), ("[a]", '["a"]'), ("~", "null")])
def test_a_secure_value_that_is_not_ciphertext_is_refused_naming_the_key(project, secure, shown):
    with pytest.raises(StackFileError, match=f"^Pulumi.s.yaml: huggingface:token: secure: {re.escape(shown)} is not "):
        read(project, f"config:\n  huggingface:token:\n    secure: {secure}\n")


def test_a_secure_value_reads_as_a_secret(project):
    (project / "Pulumi.s.yaml").write_text("config:\n  huggingface:token:\n    secure: v1:abc:def\n")
    assert read_stack_files(project, "s").secret_keys == ["huggingface:token"]


@pytest.mark.parametrize(
    ("line", "key", "shown"),
    [
        ("huggingface:token: hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "huggingface:token", "hf_…"),
        ("gcp:accessToken: ya29.a0AfH6SMBxxxxxxxx", "gcp:accessToken", "…"),
        ('gcp:credentials: \'{"private_key": "x"}\'', "gcp:credentials", "…"),
        ("wandb:key: ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123", "wandb:key", "ghp_…"),
    ],
)
def test_a_secret_in_clear_text_outside_the_project_namespace_is_refused_masked(project, line, key, shown):
    with pytest.raises(StackFileError) as refused:
        read(project, f"config:\n  {line}\n")
    assert str(refused.value) == (
        f"Pulumi.s.yaml: {key} is set in clear text ({shown}); set it as a secret instead: "
        f"`pulumi config set --secret {key} ...` (allowed: secrets only as secure values)"
    )


def test_plain_values_outside_the_project_namespace_and_a_secure_token_pass(project):
    text = "config:\n  gcp:project: p\n  gcp:region: us-east5\n  huggingface:token:\n    secure: v1:abc\n"
    assert read(project, text) == {"gcp:project": "p", "gcp:region": "us-east5", "huggingface:token": "[secret]"}


@pytest.mark.parametrize(
    ("written", "cli_reads"),
    [("010", 8), ("-010", -8), ("0x1F", 31), ("0o17", 15), ("1_000", 1000), ("08", 8.0), ("0", 0), ("12", 12)],
)
def test_numbers_are_read_as_go_yaml_v3_reads_them(project, written, cli_reads):
    """gopkg.in/yaml.v3 v3.0.1 resolve.go: strconv.ParseInt(plain, 0, 64), so a leading 0 is octal."""
    config = read(project, f"config:\n  trainyard:cluster:\n    systemPool:\n      maxNodes: {written}\n")
    assert config["trainyard:cluster"] == f'{{"systemPool": {{"maxNodes": {json.dumps(cli_reads)}}}}}'


def test_an_unquoted_date_anywhere_is_a_string_not_a_traceback(project):
    config = read(project, "config:\n  trainyard:zone: 2026-11-28\n  trainyard:cluster:\n    name: 2026-11-28\n")
    assert config["trainyard:zone"] == "2026-11-28"
    assert config["trainyard:cluster"] == '{"name": "2026-11-28"}'
