"""preflight.diff: the pure comparison of two plans, its Markdown, and `diff` over two git commits."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from cli.main import main as cli_main
from preflight.diff import compare, revisions
from preflight.diff.markdown import mermaid, render_markdown
from tests.helpers import policy_stacks as fx
from tests.helpers.plans import PROJECT_DIR


def edited(name: str, path: str, value) -> dict:
    stack = fx.good_stack()
    return fx.plan(fx.replace(stack, fx.changed(fx.by_name(stack, name), path, value)))


def test_identical_plans_have_no_changes():
    result = compare.compare(fx.plan(fx.good_stack()), fx.plan(fx.good_stack()))
    assert (result.added, result.removed, result.changed, result.new_verdicts) == ([], [], [], [])
    assert result.head_cost.max_usd_per_hour == pytest.approx(result.base_cost.max_usd_per_hour)


def test_a_resource_moved_under_an_alias_is_neither_added_nor_removed():
    stack = fx.good_stack()
    network = fx.by_name(stack, "trainyard-dev-dcn-1")
    moved = {
        **fx.changed(network, "mtu", 1500.0),
        "urn": network["urn"].replace("::trainyard-dev-dcn-1", "-new::trainyard-dev-dcn-1"),
    }

    def head_with(resource):
        return fx.plan([resource if item is network else item for item in stack])

    result = compare.compare(fx.plan(stack), head_with({**moved, "aliases": [network["urn"]]}))
    assert (result.added, result.removed, result.moved) == ([], [], [(network["urn"], moved["urn"])])
    assert [(c.path, c.old, c.new) for change in result.changed for c in change.changes] == [("mtu", 8896.0, 1500.0)]
    assert "1 moved by an alias" in render_markdown(result, "main")
    without_alias = compare.compare(fx.plan(stack), head_with(moved))
    assert [r["urn"] for r in without_alias.added] == [moved["urn"]] and without_alias.moved == []


def test_mtu_change_shows_path_values_and_the_new_violation():
    result = compare.compare(fx.plan(fx.good_stack()), edited("trainyard-dev-dcn-1", "mtu", 1500.0))
    (change,) = result.changed
    assert (change.name, [(c.path, c.old, c.new, c.replaces) for c in change.changes]) == (
        "trainyard-dev-dcn-1",
        [("mtu", 8896.0, 1500.0, False)],
    )
    assert [v.policy for v in result.new_verdicts] == ["accelerator-vpc-mtu"] and result.resolved_verdicts == []
    markdown = render_markdown(result, "main")
    assert (
        "| property | old | new | effect |" in markdown
        and "| `mtu` | `8896` | `1500` |" in markdown
        and "accelerator-vpc-mtu" in markdown
    )
    assert "[!CAUTION]" not in markdown


@pytest.mark.parametrize(
    ("name", "path", "value", "replaced"),
    [
        ("v6e-16-0", "placementPolicy.policyName", "compact-2", True),
        ("v6e-16-0", "placementPolicy.tpuTopology", "2x4", False),  # not ForceNew in the provider's schema
        (
            "gpu-nodepool-dws",
            "nodeConfig.guestAccelerators.0.gpuDriverInstallationConfig.gpuDriverVersion",
            "LATEST",
            True,
        ),
        ("gpu-nodepool-dws", "nodeConfig.spot", True, True),
        ("gpu-nodepool-dws", "queuedProvisioning.enabled", False, True),
        ("v6e-16-0", "location", "us-east5-a", True),
        ("trainyard-dev", "nodeConfig.machineType", "e2-standard-4", False),  # in place since v5.10.0
        ("trainyard-dev", "nodeConfig.spot", True, True),
        ("trainyard-dev", "location", "us-east5", True),
        ("v6e-16-0", "nodeConfig.labels.team", "ml", False),
        ("v6e-16-0", "nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA", False),
        ("system", "autoscaling.totalMaxNodeCount", 9.0, False),
        ("system", "management.autoUpgrade", False, False),
        ("trainyard-dev", "deletionProtection", False, False),
    ],
)
def test_replacement_of_clusters_and_node_pools_is_flagged(name, path, value, replaced):
    result = compare.compare(fx.plan(fx.good_stack()), edited(name, path, value))
    (change,) = result.changed
    assert change.replaced is replaced
    markdown = render_markdown(result, "main")
    assert ("will be REPLACED" in markdown) is replaced
    if replaced:
        assert re.search(rf"`{re.escape(name)}` will be REPLACED\*\* .*`{re.escape(path.split('.0.')[0])}", markdown)


def test_machine_type_change_migrates_nodes_without_replacing_the_pool():
    result = compare.compare(fx.plan(fx.good_stack()), edited("system", "nodeConfig.machineType", "e2-standard-16"))
    assert not result.changed[0].replaced
    markdown = render_markdown(result, "main")
    assert "[!CAUTION]" in markdown and "rolling migration" in markdown and "REPLACED" not in markdown


def test_added_removed_resources_cost_and_resolved_verdicts():
    base = fx.good_stack()
    bad_bucket = fx.changed(fx.bucket(), "uniformBucketLevelAccess", False)
    head = [r for r in fx.replace(base, bad_bucket) if r["name"] != "v6e-16-1"] + [fx.flex_tpu_slice_pool()]
    result = compare.compare(fx.plan(fx.replace(base, bad_bucket)), fx.plan(head))
    assert [r["name"] for r in result.added] == ["v6e-16-flex"]
    assert [r["name"] for r in result.removed] == ["v6e-16-1"]
    assert [v.policy for v in result.resolved_verdicts] == []
    assert result.head_cost.min_usd_per_hour < result.base_cost.min_usd_per_hour  # an on-demand slice became flex
    fixed = compare.compare(fx.plan(fx.replace(base, bad_bucket)), fx.plan(base))
    assert [v.policy for v in fixed.resolved_verdicts] == ["bucket-uniform-access"]
    markdown = render_markdown(result, "main")
    assert "### Added (1)" in markdown and "### Removed (1)" in markdown
    change = result.head_cost.min_usd_per_hour - result.base_cost.min_usd_per_hour
    assert f"{change:+,.2f}" in markdown


def test_mermaid_tree_has_every_resource_and_parent_edge():
    stack = fx.good_stack()
    component = fx.resource("trainyard:infra:TpuSlices", "tpu", {}, custom=False)
    for item in stack[4:6]:
        item["parent"] = component["urn"]
    lines = mermaid(stack + [component])
    assert lines[0] == "```mermaid" and lines[1] == "flowchart LR" and lines[-1] == "```"
    assert sum("-->" in line for line in lines) == 2
    assert all(any(f'["{item["name"]}<br/>' in line for line in lines) for item in stack)


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _git_out(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_diff_between_two_commits_of_a_clone(tmp_path, capsys):
    """Clone the project, commit an MTU change, and diff HEAD against HEAD~1 through `main`."""
    clone = tmp_path / "clone"
    _git("clone", "--quiet", "--no-hardlinks", str(PROJECT_DIR), str(clone), cwd=tmp_path)
    stack_file = clone / "Pulumi.dev.yaml"
    config = yaml.safe_load(stack_file.read_text())
    config["config"]["trainyard:network"]["mtu"] = 1500
    stack_file.write_text(yaml.safe_dump(config, sort_keys=False))
    _git("-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-qam", "mtu 1500", cwd=clone)
    out = tmp_path / "diff.md"
    assert cli_main(["diff", "--base", "HEAD~1", "--project-dir", str(clone), "--output", str(out)]) == 0
    markdown = out.read_text()
    captured = capsys.readouterr()
    assert markdown == captured.out.rstrip("\n") + "\n"  # stdout no terminal: Markdown, as the file
    assert "planning" not in captured.err  # progress only on a terminal
    assert re.search(r"\| `mtu` \| `8896(\.0)?` \| `1500(\.0)?` \|", markdown)
    assert "accelerator-vpc-mtu" in markdown
    assert "```mermaid" not in markdown  # nothing added, removed or replaced: no diagram
    # An MTU change updates the networks in place, but the running nodes keep theirs: a loud line names them.
    assert "> **Network `trainyard-dev-dcn-1-net`: MTU `8896` → `1500` reaches only new VMs**" in markdown
    assert "REPLACED" not in markdown
    listing = subprocess.run(["git", "worktree", "list"], cwd=clone, capture_output=True, text=True, check=True)
    worktrees = listing.stdout
    assert len(worktrees.splitlines()) == 1  # the temporary worktree was removed


def _commit_all(clone: Path, message: str) -> None:
    _git("add", "-A", cwd=clone)
    _git(
        "-c",
        "user.name=test",
        "-c",
        "user.email=test@example.com",
        "commit",
        "--allow-empty",
        "-qm",
        message,
        cwd=clone,
    )


def test_a_change_to_one_trainer_supersedes_only_its_job_and_says_so(tmp_path, capsys):
    """Two commits that differ only in a file of workloads/fsdp/: the FSDP job gets a new revision (the running
    one replaced), its image and code change, and nothing of the MaxText job does."""
    clone = tmp_path / "clone"
    _git("clone", "--quiet", "--no-hardlinks", str(PROJECT_DIR), str(clone), cwd=tmp_path)
    listed = _git_out("ls-files", "-co", "--exclude-standard", cwd=PROJECT_DIR).splitlines()
    for name in listed:  # the working tree as it is, committed in the clone
        source = PROJECT_DIR / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).write_bytes(source.read_bytes())
    _commit_all(clone, "the working tree")
    trainer = clone / "workloads/fsdp/train.py"
    trainer.write_text(trainer.read_text() + "\n# a fix that changes nothing but the bytes\n")
    _commit_all(clone, "a trainer change")
    assert cli_main(["diff", "--base", "HEAD~1", "--project-dir", str(clone)]) == 0
    markdown = capsys.readouterr().out
    assert "[!CAUTION]" in markdown
    assert re.search(  # the default updatePolicy, replace: never two revisions at once
        r"> \*\*Job `llama31-70b-fsdp` will be REPLACED: updatePolicy replace DELETES the running "
        r"`llama31-70b-fsdp-[0-9a-f]{6}` with its pods\*\* .* before `llama31-70b-fsdp-[0-9a-f]{6}` is created",
        markdown,
    )
    assert "**Image `image-fsdp`**" in markdown and "workloads-fsdp-" in markdown
    # The running revision's pods mount their code by name at every restart: that ConfigMap stays.
    kept = re.search(
        r"> ConfigMap `(workloads-fsdp-[0-9a-f]{16})` leaves the stack but stays in the cluster \(retainOnDelete\)",
        markdown,
    )
    assert kept, markdown[:3000]
    base = _plan_json(clone, "HEAD~1", tmp_path)
    (old_job,) = [m for m in base["manifests"] if m["kind"] == "Job" and m["metadata"]["name"].startswith("llama31")]
    volumes = {v["name"]: v for v in old_job["spec"]["template"]["spec"]["volumes"]}
    assert volumes["trainyard-code"]["configMap"]["name"] == kept.group(1)
    changes = markdown.split("```mermaid")[0]  # the diagram below draws every resource
    assert "llama3-8b" not in changes and "image-maxtext" not in changes and "workloads-maxtext-" not in changes


def _plan_json(clone: Path, ref: str, tmp_path: Path) -> dict:
    """The plan of `ref` in a worktree of the clone, as `preflight diff` plans its base."""
    worktree, out = tmp_path / "base-worktree", tmp_path / "base-plan.json"
    _git("worktree", "add", "--quiet", str(worktree), ref, cwd=clone)
    return revisions.plan_checkout(worktree, "dev", out) or {}


def _with_options(resource: dict, **options) -> dict:
    return {**resource, "options": options} if options else resource


@pytest.mark.parametrize(
    ("retained", "said"),
    [
        (True, "gets a new revision** (`fsdp-finetune` → `fsdp-finetune-2`"),
        (False, "will be REPLACED: the running object is DELETED with its pods** and recreated"),
    ],
)
def test_a_workload_replacement_says_whether_the_running_one_survives(retained, said):
    job = fx.changed(fx.fsdp_job(), "metadata.labels.trainyard/workload", "fsdp-finetune")
    base = fx.plan(fx.replace(fx.good_stack(), _with_options(job, **({"retainOnDelete": True} if retained else {}))))
    head = fx.plan(fx.replace(fx.good_stack(), fx.changed(job, "metadata.name", "fsdp-finetune-2")))
    markdown = render_markdown(compare.compare(base, head), "base")
    assert "[!CAUTION]" in markdown and f"> **Job `fsdp-finetune` {said}" in markdown


def test_a_workload_leaving_the_stack_says_whether_it_keeps_running():
    job = fx.fsdp_job()
    gone = fx.plan([r for r in fx.good_stack() if r["name"] != job["name"]])
    for options, said in (({"retainOnDelete": True}, "leaves the stack**: the object stays"), ({}, "will be DELETED")):
        base = fx.plan(fx.replace(fx.good_stack(), _with_options(job, **options)))
        markdown = render_markdown(compare.compare(base, gone), "base")
        assert f"> **Job `fsdp-finetune` {said}" in markdown


def test_the_working_tree_of_this_code_is_planned_in_process(dev_plan, tmp_path):
    assert revisions.runs_this_code(PROJECT_DIR) and not revisions.runs_this_code(tmp_path)
    assert revisions.plan_here(PROJECT_DIR, "dev")["resources"] == dev_plan.to_json()["resources"]


def test_each_side_is_judged_by_its_own_pack_config():
    """A head whose pack config makes the budget mandatory and lower fails it; the base, judged by its own
    (default) config, did not: the verdict is new in the diff, not 'no change'."""
    plan = fx.plan(fx.good_stack())
    strict = {"cost-within-budget": {"enforcementLevel": "mandatory", "maxUsdPerHour": 1}}
    result = compare.compare(plan, plan, strict, base_pack_config={})
    assert [(v.policy, v.level) for v in result.new_verdicts] == [("cost-within-budget", "mandatory")]
    assert compare.compare(plan, plan, strict).new_verdicts == []  # one config for both: nothing changed


def test_the_base_pack_config_is_read_at_the_base_revision(tmp_path):
    clone = tmp_path / "clone"
    _git("clone", "--quiet", "--no-hardlinks", str(PROJECT_DIR), str(clone), cwd=tmp_path)
    config = clone / "policies" / "config.dev.json"
    config.write_text('{"cost-within-budget": {"maxUsdPerHour": 5}}')
    _commit_all(clone, "a budget")
    config.write_text('{"cost-within-budget": {"maxUsdPerHour": 50}}')
    assert revisions.pack_config_at(clone, "HEAD", "dev") == {"cost-within-budget": {"maxUsdPerHour": 5}}
    assert revisions.pack_config_at(clone, "HEAD~1", "dev") == {}  # absent there: every default
    config.write_text("[1]")
    _commit_all(clone, "a broken config")
    with pytest.raises(revisions.policy_runner.PackConfigError, match=r"config.dev.json at HEAD: is a JSON list"):
        revisions.pack_config_at(clone, "HEAD", "dev")
