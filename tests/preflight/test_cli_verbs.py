"""The command line as a new user meets it: `trainyard --help` names every verb, each verb's help shows examples,
the console script runs unactivated from any folder, and a Python without the venv gets one line, not a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import VERBS, with_verb
from tests.helpers.plans import PROJECT_DIR, dev_config_values

TRAINYARD = Path(sys.executable).parent / "trainyard"


def run(*command: str | Path, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )


def preflight(*args: str, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "preflight", *args, cwd=cwd)


def test_help_lists_every_verb_with_examples():
    result = preflight("--help")
    assert result.returncode == 0, result.stderr
    verbs = result.stdout.split("verbs:", 1)[1]
    for verb in VERBS:
        assert f"\n    {verb} " in verbs
    assert "examples:" in result.stdout and "make preflight" in result.stdout


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_has_help_with_examples_within_100_columns(verb):
    result = preflight(verb, "--help")
    assert result.returncode == 0, result.stderr
    assert ("--stack" in result.stdout) == (verb in ("plan", "diff", "forecast"))  # catalog and schema read none
    examples = result.stdout.split("examples:\n", 1)[1]
    assert f"trainyard {verb}" in examples
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_no_verb_is_plan_and_a_verb_stays_as_given():
    assert with_verb(["--stack", "dev"]) == ["plan", "--stack", "dev"]
    assert with_verb([]) == ["plan"]
    assert with_verb(["forecast", "--stack", "dev"]) == ["forecast", "--stack", "dev"]
    assert with_verb(["--help"]) == ["--help"]


def test_the_console_script_runs_unactivated_from_another_folder(tmp_path):
    assert TRAINYARD.is_file(), f"{TRAINYARD} missing: `make .venv/bin/trainyard` installs it"
    result = run(TRAINYARD, "forecast", "--project-dir", PROJECT_DIR, "--json", "-", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    forecast = json.loads(result.stdout)
    assert forecast["stack"] == "dev"
    assert {entry["job"] for entry in forecast["forecast"]} >= {"llama31-70b-fsdp", "llama3-8b"}


def test_a_python_without_the_venv_gets_one_line_not_a_traceback():
    # -S leaves out site-packages: the interpreter a user has before `make preflight` built .venv.
    result = run(sys.executable, "-S", "-m", "preflight", "--stack", "dev")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "trainyard: this Python has no pulumi: run `make preflight`, then use .venv/bin/trainyard"
    )


def test_the_venv_python_passes_the_environment_check():
    from preflight.__main__ import environment_problem

    assert environment_problem() is None


def test_forecast_text_fits_100_columns():
    result = preflight("forecast", "--stack", "dev")
    assert result.returncode == 0, result.stderr
    assert "llama31-70b-fsdp: meta-llama/Llama-3.1-70B" in result.stdout
    maxtext = result.stdout.split("llama3-8b: MaxText llama3-8b", 1)[1]  # instant, or compiled where cached
    assert re.search(r"\n  step: [\d.]+ s estimated", maxtext.split("\nllama", 1)[0])
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_forecast_of_a_bad_stack_exits_2_naming_the_key(tmp_path):
    values = dev_config_values()
    values["trainyard:tpuSlices"][0]["topology"] = "4x3"
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.broken.yaml").write_text(json.dumps({"config": values}))
    result = preflight("forecast", "--stack", "broken", "--project-dir", str(tmp_path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert 'trainyard:tpuSlices[0].topology: "4x3" is not a v6e topology' in result.stderr


def test_plan_json_on_stdout_is_the_plan_alone(tmp_path):
    result = preflight("plan", "--stack", "dev", "--json", "-")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert (plan["project"], plan["stack"]) == ("trainyard", "dev") and "forecast" in plan
    assert result.stderr.rstrip().splitlines()[-1].startswith("trainyard: OK — ")


def test_a_plan_as_the_process_own_command_runs_with_the_collector_off_and_exits_at_once(monkeypatch):
    """The console script and `python -m preflight` plan (and diff) with the cyclic collector off, then run the
    atexit functions and end the process without tearing the interpreter down (cli/main.py run_then_exit); a call
    with an argument list, and any other verb, run as always."""
    import atexit
    import gc
    import os

    from cli import catalog as cli_catalog
    from cli import diff as cli_diff
    from cli import main as cli_main
    from cli import plan as cli_plan

    ended: list[str] = []

    def exit_now(code: int):
        ended.append("exit")
        raise SystemExit(code)

    monkeypatch.setattr(cli_plan, "run", lambda args: 3 if gc.isenabled() else 4)
    monkeypatch.setattr(cli_catalog, "run", lambda args: 3 if gc.isenabled() else 4)
    monkeypatch.setattr(cli_diff, "run", lambda args: 3 if gc.isenabled() else 4)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: ended.append("atexit"))
    monkeypatch.setattr(os, "_exit", exit_now)
    try:
        assert cli_main.main(["--stack", "dev"]) == 3
        monkeypatch.setattr(sys, "argv", ["trainyard", "catalog"])
        assert cli_main.main() == 3
        assert ended == []
        monkeypatch.setattr(sys, "argv", ["trainyard", "--stack", "dev"])
        with pytest.raises(SystemExit) as exited:
            cli_main.main()
        assert exited.value.code == 4 and ended == ["atexit", "exit"]
        gc.enable()
        monkeypatch.setattr(sys, "argv", ["trainyard", "diff", "--base", "HEAD"])
        with pytest.raises(SystemExit) as exited:
            cli_main.main()
        assert exited.value.code == 4 and ended == ["atexit", "exit"] * 2
    finally:
        gc.enable()
