"""A job's updatePolicy: what its new revision does to the running one, said by the diff from preflight's own
admission model, with the overlap's price."""

from __future__ import annotations

import re

import pytest

from preflight.diff import compare
from preflight.diff.markdown import render_markdown


def _policy(policy: str):
    def edit(values):
        for job in values["trainyard:jobs"]["fsdp"] + values["trainyard:jobs"]["maxtext"]:
            job["updatePolicy"] = policy

    return edit


def _new_revisions(values) -> None:
    values["trainyard:jobs"]["fsdp"][0]["args"]["num-train-epochs"] = "13"
    values["trainyard:jobs"]["maxtext"][0]["steps"] = 200


@pytest.fixture(scope="module")
def diffs(plan_with):
    found = {}
    for policy in ("replace", "keep"):
        base = plan_with(_policy(policy))
        head = plan_with(lambda values, policy=policy: (_policy(policy)(values), _new_revisions(values)))
        found[policy] = (base, compare.compare(base.to_json(), head.to_json()))
    return found


def _job(plan, kind: str):
    return next(r for r in plan.to_json()["resources"] if r["type"].endswith(f":{kind}"))


def test_replace_is_the_default_and_deletes_the_running_revision_first(dev_plan, diffs):
    for kind in ("Job", "RayJob"):
        assert _job(dev_plan, kind).get("options") == {"deleteBeforeReplace": True}
    markdown = render_markdown(diffs["replace"][1], "base")
    for workload in ("llama31-70b-fsdp", "llama3-8b"):
        assert re.search(
            rf"> \*\*\w+ `{workload}` will be REPLACED: updatePolicy replace DELETES the running `{workload}-\w{{6}}` "
            r"with its pods\*\* .*the two never run at once; it (starts from step 0|resumes run)",
            markdown,
        )
    assert "beside" not in markdown and "/h more" not in markdown


def test_keep_says_whether_kueue_starts_the_new_revision_at_once_and_what_the_overlap_costs(diffs):
    base, result = diffs["keep"]
    assert _job(base, "Job").get("options") == {"retainOnDelete": True}
    markdown = render_markdown(result, "base")
    # The dev ClusterQueue's GPU quota (80) holds two 16-GPU revisions: the second starts from step 0 beside the
    # first, at the job's own price per hour (python -m preflight forecast: ~$105/h).
    fsdp = re.search(
        r"> \*\*Job `llama31-70b-fsdp` gets a new revision\*\* .*updatePolicy keep leaves the running "
        r"`llama31-70b-fsdp-\w{6}` to its end .*\*\*Kueue admits `llama31-70b-fsdp-\w{6}` at once beside it\*\* "
        r".*about \$(\d+)/h more",
        markdown,
    )
    assert fsdp and 90 <= int(fsdp.group(1)) <= 120
    # The v6e quota (32 chips) holds one MaxText revision: the new one waits, in Kueue's words.
    assert re.search(
        r"> \*\*RayJob `llama3-8b` gets a new revision\*\* .*`llama3-8b-\w{6}` waits for its quota until then "
        r"\(Kueue: .*insufficient quota for google.com/tpu in flavor v6e-16",
        markdown,
    )


def test_an_invalid_policy_is_one_line_naming_the_key(plan_with):
    from components.config.load import ConfigError

    with pytest.raises(ConfigError, match=r"trainyard:jobs\.fsdp\[0\]\.updatePolicy"):
        plan_with(_policy("queue"))
