"""`trainyard job VERB` as a user types it (cli/main.py -> cli/job.py), offline: --help, --from and --dry-run."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from cli.main import main
from tests.helpers.plans import PROJECT_DIR, dev_config_values

FIXTURES = Path(__file__).with_name("fixtures")


def trainyard(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:  # argparse's --help and usage errors
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_job_help_lists_every_verb_with_examples():
    code, out, _ = trainyard("job", "--help")
    assert code == 0
    for verb in ("submit", "list", "status", "logs", "cancel"):
        assert verb in out
    assert "trainyard job why my-run --from dump.yaml" in out and "examples:" in out


def test_why_reads_a_dump_and_a_missing_job_lists_the_jobs():
    code, out, _ = trainyard("job", "why", "llama31-70b-fsdp", "--from", str(FIXTURES / "provisioning.yaml"))
    assert code == 0 and out.startswith("Job llama31-70b-fsdp-390a0d: waiting for DWS capacity")
    code, _, err = trainyard("job", "status", "nope", "--from", str(FIXTURES / "provisioning.yaml"))
    assert code == 2 and err == "trainyard job: no job 'nope' in namespace trainyard (jobs: llama31-70b-fsdp)\n"


def test_list_reads_a_dump_and_prices_it_from_the_stack():
    code, out, _ = trainyard("job", "list", "--from", str(FIXTURES / "list.yaml"), "--project-dir", str(PROJECT_DIR))
    assert code == 0
    (running,) = [line for line in out.splitlines() if line.startswith("llama3-8b-75ecc4 ")]
    assert "running" in running and "v6e-16" in running and "$" in running and "?" not in running.split()


def test_a_broken_dump_is_one_line(tmp_path):
    broken = tmp_path / "dump.yaml"
    broken.write_text("items: [\n")
    code, _, err = trainyard("job", "list", "--from", str(broken))
    assert code == 2 and err.startswith("trainyard job: ") and err.count("\n") == 1


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[int, str, str]:
    entry = {**dev_config_values()["trainyard:jobs"]["fsdp"][0], "name": "ft-small", "nodes": 1}
    entry.pop("enabled")
    path = tmp_path_factory.mktemp("job") / "ft.yaml"
    path.write_text(yaml.safe_dump({"kind": "fsdp", **entry}))
    return trainyard("job", "submit", str(path), "--dry-run", "--project-dir", str(PROJECT_DIR))


def test_submit_dry_run_prints_the_objects_and_verdicts_and_sends_nothing(dry_run):
    code, out, err = dry_run
    assert code == 0, err
    kinds = [document["kind"] for document in yaml.safe_load_all(out)]
    assert kinds == ["ConfigMap", "Service", "Job"]  # the code ConfigMap, the rendezvous Service, then the Job
    assert "admitted on gpu-nodepool-dws (main)" in err and "forecast:" in err
    assert err.rstrip().endswith("ft-small: OK, 3 objects (dry run: nothing sent)")


def test_a_real_submit_without_an_image_by_digest_is_refused_before_any_call(tmp_path):
    entry = {**dev_config_values()["trainyard:jobs"]["fsdp"][0], "name": "ft-small", "nodes": 1}
    path = tmp_path / "ft.yaml"
    path.write_text(yaml.safe_dump({"kind": "fsdp", **entry}))
    code, _, err = trainyard("job", "submit", str(path), "--project-dir", str(PROJECT_DIR))
    assert code == 2 and "--image: a real submit needs the trainer image by digest" in err
