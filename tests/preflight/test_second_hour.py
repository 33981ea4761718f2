"""Errors that finish the thought, and a CLI that stands on its own (issue 41): did-you-mean for keys, values and
verbs, YAML's words (a list, not a tuple), the stacks that exist, a version, singular counts."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest

from cli.main import main
from cli.output import counted
from components.config.load import load_stack_config
from tests.components.config.test_grammars import _refusal as refusal
from tests.helpers.plans import PROJECT_DIR, as_engine_config, dev_config_values


def trainyard(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_a_misspelt_key_gets_the_closest_key():
    def typo(values):
        group = values["trainyard:tpuSlices"][0]
        group["topolgy"] = group.pop("topology")

    assert "trainyard:tpuSlices[0].topolgy: is not a known key (did you mean topology? allowed: name," in refusal(typo)


def test_an_enum_value_in_the_wrong_case_gets_the_right_one():
    message = refusal(lambda values: values["trainyard:gpuPools"][0].update(capacity="Spot"))
    assert 'trainyard:gpuPools[0].capacity: "Spot" is not allowed (did you mean spot? allowed: dwsQueued,' in message
    message = refusal(lambda values: values["trainyard:gpuPools"][0].update(capacity="banana"))
    assert "did you mean" not in message  # nothing close: no guess


def test_a_scalar_where_a_list_belongs_says_list_not_tuple():
    message = refusal(lambda values: values["trainyard:jobs"]["fsdp"][0].update(gated="meta-llama/x"))
    assert message.endswith('gated: "meta-llama/x" is not allowed (input should be a list)')


def test_an_unknown_verb_lists_the_verbs_and_the_closest():
    code, _, err = trainyard("plna")
    assert code == 2
    assert err == (
        "trainyard: 'plna' is not a verb (did you mean plan? verbs: plan, diff, forecast, catalog, schema, job; "
        "`trainyard --help` says more)\n"
    )


def test_a_missing_stack_lists_the_stacks_there():
    code, _, err = trainyard("plan", "--stack", "nope", "--project-dir", str(PROJECT_DIR))
    stacks = "a4x, dev, gpu-only, prod-like, tpu-only, tpu7x"
    assert code == 2 and f"Pulumi.nope.yaml does not exist (stacks here: {stacks})" in err


def test_version_names_the_commit_and_the_pinned_sdks():
    code, out, _ = trainyard("--version")
    assert code == 0 and re.fullmatch(
        r"trainyard \S+ \(pulumi [\d.]+, pulumi-gcp [\d.]+, pulumi-kubernetes [\d.]+\)\n", out
    )


def test_counts_are_singular_at_one():
    assert [counted(n, "problem") for n in (0, 1, 2)] == ["0 problems", "1 problem", "2 problems"]


def test_a_misspelt_pack_setting_or_policy_is_refused_with_the_closest(tmp_path):
    from preflight.checks.policy_runner import PackConfigError, evaluate

    with pytest.raises(
        PackConfigError,
        match=r"cost-within-budget.maxUsdPerHr: is not a setting of cost-within-budget "
        r"\(did you mean maxUsdPerHour\? allowed: enforcementLevel, maxUsdPerHour\)",
    ):
        evaluate({"resources": []}, {"cost-within-budget": {"maxUsdPerHr": 5}})
    with pytest.raises(
        PackConfigError, match=r"unknown policies \['cost-within-budgte'\] \(did you mean cost-within-budget\?"
    ):
        evaluate({"resources": []}, {"cost-within-budgte": {"maxUsdPerHour": 5}})


def test_the_first_hour_quotes_the_70b_estimate_the_plan_gives():
    """docs/first-hour.md §6 quotes preflight's instant HBM figure for the dev stack's 70B job switched on; a change
    to the estimate fails here until the page says the new figure."""
    from preflight.forecast.report import stack_forecasts

    values = dev_config_values()
    values["trainyard:jobs"]["maxtext"][1]["enabled"] = True
    forecasts = stack_forecasts(load_stack_config(as_engine_config(values), "dev"))
    (seventy,) = [f.to_json() for f in forecasts if f.job == "llama3-70b"]
    planned = re.search(r"~([\d.]+) GiB of HBM per chip", seventy["none"]).group(1)
    page = (PROJECT_DIR / "docs" / "first-hour.md").read_text()
    quoted = re.search(r"instant HBM estimate puts it at ~([\d.]+) GiB per", " ".join(page.split())).group(1)
    assert seventy["cannotRun"] and quoted == planned


def test_every_policy_that_can_fire_is_in_docs_policies_md():
    """The table is written from the pack's own policies; a new or renamed rule fails here until the page has it."""
    from policies import rules
    from preflight.checks import policy_docs

    page = policy_docs.DOC.read_text()
    assert policy_docs.documented(page) == page, "run `python -m preflight.checks.policy_docs`"
    assert all(f"| `{policy.name}` |" in page for policy in rules.POLICIES)


def test_a_config_error_names_the_file_and_line_of_its_key(tmp_path):
    """The key's own line, or its nearest parent's when the key is missing (a required key left out)."""
    from components.config.problem import UNSET, ConfigProblem
    from preflight.engine.config_lines import located

    text = (PROJECT_DIR / "Pulumi.dev.yaml").read_text().replace("      topology: 4x4", "      topolgy: 4x4")
    stack_file = tmp_path / "Pulumi.mine.yaml"
    stack_file.write_text(text)
    lines = text.splitlines()
    typo = next(n for n, line in enumerate(lines, 1) if "topolgy:" in line)
    group = next(n for n, line in enumerate(lines, 1) if "- name: v6e-16" in line)
    problems = [
        ConfigProblem("trainyard:tpuSlices[0].topolgy", UNSET, "is not a known key"),
        ConfigProblem("trainyard:tpuSlices[0].topology", UNSET, "is required but not set"),
    ]
    assert located(problems, stack_file).splitlines() == [
        f"Pulumi.mine.yaml:{typo}: trainyard:tpuSlices[0].topolgy: is not a known key",
        f"Pulumi.mine.yaml:{group}: trainyard:tpuSlices[0].topology: is required but not set",
    ]


def test_a_placement_problem_and_an_mtu_verdict_name_the_key_to_change():
    """A Ray worker too big for its node was reported by pod template only; an MTU by network name only."""
    from preflight.checks.placement import PlacementProblem, with_config_key
    from preflight.checks.policy_runner import Verdict, render_table

    worker = PlacementProblem(
        "RayJob trainyard/llama3-8b-fb8344",
        "workerGroupSpecs[0]",
        "container ray-worker requests memory 838.19 GiB, but the closest pool has 698.74 GiB allocatable",
        "memory",
    )
    keys = {"llama3-8b": "trainyard:jobs.maxtext[0]", "llama31-70b-fsdp": "trainyard:jobs.fsdp[0]"}
    assert str(with_config_key(worker, keys)).endswith("(change trainyard:jobs.ray.workerMemory)")
    pods = PlacementProblem("Job trainyard/llama31-70b-fsdp-40786c", "", "needs 12 pods in one pool, but ...")
    assert str(with_config_key(pods, keys)).endswith("(change trainyard:jobs.fsdp[0])")
    mtu = Verdict("accelerator-vpc-mtu", "mandatory", "urn:x::net", "network 'net': mtu is 1500")
    assert "(change trainyard:network.mtu)" in render_table([mtu])


def test_the_readmes_sample_verdict_is_the_dev_plans(dev_plan):
    """The README's sample output ends with the dev stack's verdict line: counts and cost as the plan gives them."""
    from cli.plan import verdict_line
    from preflight.verdict import check

    readme = (PROJECT_DIR / "README.md").read_text()
    (sample,) = [line for line in readme.splitlines() if line.startswith("trainyard: OK — ")]
    assert sample == verdict_line(dev_plan, check(dev_plan, {}))
    assert f"Plan for trainyard/dev: {sample.split(' — ')[1].split(' resources')[0]} resources" in readme
