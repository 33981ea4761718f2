"""The docs work: every file they name exists, every offline command in their shell blocks exits 0.

README.md and docs/*.md are read as a user reads them. Commands run in a sandbox: a temporary folder with
the repository's top-level entries symlinked in, so a recipe's `cp Pulumi.dev.yaml Pulumi.mine.yaml` or
`--json plan.json` writes there, not into the checkout. `python -m preflight …` runs in this process (one
import, as the fuzz test does); a `make` line runs the preflight command its recipe expands to (`make -n`),
so a target that stopped calling preflight, or lost an option, fails here. Commands that need a cloud
account, and make targets too slow or networked for a unit test, are named below and never run: a make
target must still exist, and a preflight verb must still take the options the docs give it.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from tests.helpers.plans import PROJECT_DIR

DOCS = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
FIRST_HOUR = PROJECT_DIR / "docs" / "first-hour.md"

# Shell lines that need a cloud account, a deployed stack or a person's git history: documented, never run.
CLOUD_COMMANDS = {"pulumi", "gcloud", "kubectl", "docker", "$(pulumi", "git"}
# make targets a unit test does not run (each is a suite, a long compile or training run, or needs the
# internet, or rewrites a tracked file); each must still exist in the Makefile.
NOT_RUN_TARGETS = {
    "test",
    "test-infra",
    "test-fsdp",
    "test-maxtext",
    "lint",
    "docs",  # rewrites docs/configuration.md: tests/components/config/test_config_reference.py checks it
    "stack-schema",  # rewrites docs/stack-schema.json: tests/preflight/test_stack_schema.py checks it
    "schemas",
    "fit-check",
    "train-local",
    "train-local-fsdp",
    "train-local-maxtext",
}
# preflight verbs that plan two revisions (tests/preflight/diff/ runs them), and any command with --write (it
# rewrites a tracked file, which its own test checks): their options are checked against --help, not run.
NOT_RUN_VERBS = {"diff"}
# Files the documented commands write; the docs name them, a clone does not hold them.
WRITTEN_BY_COMMANDS = {"plan.json", "pack.json", "preflight-diff.md"}
# Folders a clone creates as it runs (venvs, caches): named by the docs, absent from a fresh clone.
CREATED_BY_RUNS = (".cache", ".venv")
# Each recipe's edit, as docs/first-hour.md words it ("change `old` to `new`"), on the stack it starts from.
RECIPE_EDITS = [
    ("tpu-only", "count: 1", "count: 2"),
    ("tpu-only", "capacity: spot", "capacity: onDemand"),
    ("gpu-only", "capacity: dwsQueued", "capacity: spot"),
    ("dev", "nodes: 2", "nodes: 4"),
]

SEPARATORS = {"&&", "||", ";"}
PIPES_AND_REDIRECTIONS = {"|", ">", ">>", "<", "&>"}
SETTING = re.compile(r"[A-Za-z_]\w*=")
FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FILE_NAME = re.compile(r"[\w.-]+\.(md|py|yaml|yml|json|txt|toml|mk|sh|cfg)")
NOT_A_PATH = re.compile(r"[<>*…$:@={}\[\]]|^[/~]|\s")


def _text(doc: Path) -> str:
    return doc.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The page without its fenced blocks (their contents are commands, config or output, not references)."""
    return FENCED.sub("", text)


def shell_lines(markdown: str) -> Iterator[list[str]]:
    """Each command of the sh/bash blocks in `markdown`, as words: comments dropped, `a && b` and `a; b` as two
    commands, leading VAR=value settings dropped, and a pipe or redirection cut off (the command before it
    is what must exit 0; its output goes to the test's capture, not into a file)."""
    for language, body in FENCED.findall(markdown):
        if language in ("sh", "bash", "shell"):
            for line in body.splitlines():
                lexer = shlex.shlex(line, posix=True, punctuation_chars="|;&<>")
                lexer.whitespace_split = True
                yield from _commands(list(lexer))


def _commands(words: list[str]) -> Iterator[list[str]]:
    command: list[str] = []
    cut = False
    for word in [*words, ";"]:
        if word in SEPARATORS:
            while command and SETTING.match(command[0]):
                command.pop(0)
            if command:
                yield command
            command, cut = [], False
        elif word in PIPES_AND_REDIRECTIONS:
            cut = True
        elif not cut:
            command.append(word)


@functools.cache
def repo_file_names() -> frozenset[str]:
    """The name of every file in the checkout (venvs, caches and git's own files aside)."""
    names = set()
    for folder, subfolders, files in os.walk(PROJECT_DIR):
        subfolders[:] = [name for name in subfolders if name != ".git" and not name.startswith(CREATED_BY_RUNS)]
        names.update(files)
    return frozenset(names)


def missing_paths(doc: Path) -> list[str]:
    text = _text(doc)
    missing = []
    for target in LINK.findall(text):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        if not (doc.parent / target.split("#", 1)[0]).exists():
            missing.append(target)
    top_level = set(os.listdir(PROJECT_DIR))
    copies = {words[-1] for words in shell_lines(text) if words[0] == "cp"}  # what the page's recipes create
    for token in INLINE_CODE.findall(_prose(text)):
        token = token.rstrip(".,;")
        if NOT_A_PATH.search(token) or token.startswith(CREATED_BY_RUNS) or token in WRITTEN_BY_COMMANDS | copies:
            continue
        if "/" in token:
            if token.split("/", 1)[0] in top_level and not (PROJECT_DIR / token).exists():
                missing.append(token)
        elif FILE_NAME.fullmatch(token) and token not in repo_file_names():
            missing.append(token)
    return missing


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(PROJECT_DIR).as_posix())
def test_every_file_a_page_names_exists(doc: Path):
    assert missing_paths(doc) == [], f"{doc.name} names files that do not exist"


def test_the_path_check_finds_a_missing_file(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "Edit `Pulumi.prod.yaml`, then `policies/config.dev.json`; see [x](nowhere.md) and `docs/preflight.md`.\n"
        "Not paths: `meta-llama/Llama-3.1-70B`, `10.0.0.0/20`, `Pulumi.<stack>.yaml`, `/dev/shm`.\n"
    )
    assert missing_paths(page) == ["nowhere.md", "Pulumi.prod.yaml", "policies/config.dev.json"]


def test_the_readme_first_screen_is_short():
    assert len(_text(PROJECT_DIR / "README.md").splitlines()) < 60


def test_the_readme_quick_start_is_what_ci_runs():
    """.ci/run calls the README's test command; the quick start stays those two commands."""
    readme = _text(PROJECT_DIR / "README.md")
    quick_start = readme.split("## Quick start", 1)[1].split("## ", 1)[0]
    assert [words[:2] for words in shell_lines(quick_start)] == [["make", "preflight"], ["make", "test"]]
    assert "make test" in _text(PROJECT_DIR / ".ci" / "run")


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkout's top-level entries, symlinked into a folder of their own; the tests run in it."""
    for entry in PROJECT_DIR.iterdir():
        if entry.name != ".git":
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_preflight(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as done:  # argparse's --help
        return int(done.code or 0)


def make_dry_run(folder: Path, words: list[str]) -> list[str]:
    done = subprocess.run(
        ["make", "-n", *words[1:]], cwd=folder, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"{shlex.join(words)}: {done.stderr.strip()}"
    return done.stdout.splitlines()


def preflight_args(words: list[str]) -> list[str] | None:
    """The arguments of a preflight command (`python -m preflight …` or the `trainyard` console script that
    runs the same main), or None when `words` run something else."""
    if words[0].endswith("python") and words[1:3] == ["-m", "preflight"]:
        return words[3:]
    if words[0] == "trainyard" or words[0].endswith("/trainyard"):
        return words[1:]
    return None


def run_preflight_command(args: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    """Run a preflight command here, or check the options of one that plans twice, rewrites a tracked file, or (a
    `job` verb) reads a cluster or the user's own files."""
    if args[:1] == ["job"] and len(args) > 1 and not args[1].startswith("-"):
        check_verb_options(args, capsys, prefix=["job"])
        return 0
    if args and (args[0] in NOT_RUN_VERBS or "--write" in args):
        check_verb_options(args, capsys)
        return 0
    return run_preflight(args)


def check_verb_options(args: list[str], capsys: pytest.CaptureFixture[str], prefix: list[str] = ()) -> None:
    """A verb not run here must still take every option the docs give it."""
    args = args[len(prefix) :]
    verb = args[0]
    assert run_preflight([*prefix, verb, "--help"]) == 0
    usage = capsys.readouterr().out
    for option in (arg.split("=", 1)[0] for arg in args[1:] if arg.startswith("-")):
        assert option in usage, f"preflight {' '.join([*prefix, verb])} has no {option}"


def run_line(words: list[str], folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    command = shlex.join(words)
    if words[0] in CLOUD_COMMANDS:
        return
    if words[0] == "cp":
        shutil.copy(folder / words[1], folder / words[2])
        return
    if words[0] == "make":
        recipe = make_dry_run(folder, words)
        target = next(word for word in words[1:] if "=" not in word)
        if target in NOT_RUN_TARGETS:
            return
        runs = [args for line in recipe if (args := preflight_args(shlex.split(line))) is not None]
        assert runs, f"{command}: its recipe runs no preflight command; list it in NOT_RUN_TARGETS if it is slow"
        for args in runs:
            assert run_preflight_command(args, capsys) == 0, command
        return
    if (args := preflight_args(words)) is not None:
        assert run_preflight_command(args, capsys) == 0, command
        return
    pytest.fail(f"{command}: unknown to the docs test (add it to CLOUD_COMMANDS, or teach the test to run it)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(PROJECT_DIR).as_posix())
def test_every_offline_command_a_page_gives_exits_0(doc: Path, sandbox: Path, capsys: pytest.CaptureFixture[str]):
    for words in shell_lines(_text(doc)):
        run_line(words, sandbox, capsys)


def test_a_failing_or_unknown_command_fails_the_docs_test(sandbox: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(pytest.fail.Exception, match="unknown to the docs test"):
        run_line(["curl", "https://example.com"], sandbox, capsys)
    with pytest.raises(AssertionError, match="No rule to make target"):
        run_line(["make", "no-such-target"], sandbox, capsys)
    with pytest.raises(AssertionError, match="make preflight STACK=no-such-stack"):
        run_line(["make", "preflight", "STACK=no-such-stack"], sandbox, capsys)  # exit 2: no such stack file
    with pytest.raises(AssertionError, match="has no --no-such-option"):
        run_line([".venv/bin/python", "-m", "preflight", "diff", "--no-such-option"], sandbox, capsys)


@pytest.mark.parametrize("stack", sorted(path.name.split(".")[1] for path in PROJECT_DIR.glob("Pulumi.*.yaml")))
def test_every_stack_file_in_the_repository_plans(stack: str, sandbox: Path):
    assert run_preflight(["--stack", stack]) == 0


@pytest.mark.parametrize(("stack", "old", "new"), RECIPE_EDITS)
def test_each_first_hour_edit_plans(stack: str, old: str, new: str, sandbox: Path):
    assert f"`{old}` to `{new}`" in _text(FIRST_HOUR), "the recipe no longer words this edit"
    original = _text(PROJECT_DIR / f"Pulumi.{stack}.yaml")
    assert original.count(old) == 1, f"Pulumi.{stack}.yaml: the edit's `{old}` is not one line"
    (sandbox / "Pulumi.mine.yaml").write_text(original.replace(old, new), encoding="utf-8")
    assert run_preflight(["--stack", "mine"]) == 0


def test_shell_lines_split_chains_and_cut_pipes_and_redirections():
    block = (
        "```sh\n"
        "PYTHON=python3.12 make preflight STACK=dev && trainyard plan --json - | jq .cost  # a comment\n"
        "trainyard forecast --pack-config in.json > out.json; make test\n"
        "```\n"
    )
    assert list(shell_lines(block)) == [
        ["make", "preflight", "STACK=dev"],
        ["trainyard", "plan", "--json", "-"],
        ["trainyard", "forecast", "--pack-config", "in.json"],
        ["make", "test"],
    ]


def test_switching_on_the_70b_job_fails_as_the_recipe_says(sandbox: Path, capsys: pytest.CaptureFixture[str]):
    """docs/first-hour.md, recipe 6: the dev stack's llama3-70b, switched on, does not fit its chips (exit 1)."""
    assert "set that job's `enabled: false` to `enabled: true`" in _text(FIRST_HOUR)
    job_off = "      - name: llama3-70b\n        enabled: false\n"
    dev = _text(PROJECT_DIR / "Pulumi.dev.yaml")
    assert dev.count(job_off) == 1
    (sandbox / "Pulumi.mine-dev.yaml").write_text(dev.replace(job_off, job_off.replace("false", "true")))
    capsys.readouterr()
    assert run_preflight(["--stack", "mine-dev"]) == 1
    assert "llama3-70b: DOES NOT FIT" in capsys.readouterr().out
