"""Every figure a page quotes from the dev plan is the dev plan's: a change to the plan, its cost or its forecast
fails here, naming the page and the figure, until the page says the new one. (The README's verdict line and the
first hour's 70B estimate are held in test_second_hour.py.)"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from components.config.load import load_stack_config
from preflight.engine.plan import Plan
from preflight.forecast.report import stack_forecasts
from preflight.verdict import check
from tests.helpers.plans import PROJECT_DIR


def fsdp_forecast(plan: Plan) -> dict:
    (fsdp,) = [
        f.to_json() for f in stack_forecasts(load_stack_config(plan.config, plan.stack)) if "gpus" in f.to_json()
    ]
    return fsdp


def gpu_quota(plan: Plan) -> int:
    """The GPUs the ClusterQueue's flavors hold, summed as Kueue sums a resource group's nominal quotas."""
    (queue,) = [m for m in plan.manifests if m.get("kind") == "ClusterQueue"]
    return sum(
        int(float(resource["nominalQuota"]))
        for group in queue["spec"]["resourceGroups"]
        for flavor in group["flavors"]
        for resource in flavor["resources"]
        if resource["name"] == "nvidia.com/gpu"
    )


# (page, the sentence's pattern with one group for the figure, the figure from the plan as the page writes it)
QUOTED: list[tuple[str, str, Callable[[Plan], str]]] = [
    (
        "policies.md",
        r"the dev stack tops out at ~\$([\d,]+)/h",
        lambda plan: f"{check(plan, {}).cost.max_usd_per_hour:,.0f}",
    ),
    ("policies.md", r"dev's FSDP window is ~\$([\d,]+)", lambda plan: f"{fsdp_forecast(plan)['usdPerWindow']:,.0f}"),
    (
        "operations.md",
        r"the dev FSDP job: ~\$([\d,]+)/h more",
        lambda plan: f"{fsdp_forecast(plan)['usdPerHour']:,.0f}",
    ),
    ("operations.md", r"the dev stack's (\d+)-GPU quota", lambda plan: str(gpu_quota(plan))),
    ("operations.md", r"holds two (\d+)-GPU FSDP runs", lambda plan: str(fsdp_forecast(plan)["gpus"])),
]


@pytest.mark.parametrize(("page", "pattern", "figure"), QUOTED, ids=[f"{p}:{q[:30]}" for p, q, _ in QUOTED])
def test_a_pages_figure_is_the_dev_plans(dev_plan, page, pattern, figure):
    text = " ".join((PROJECT_DIR / "docs" / page).read_text().split())
    quoted = re.search(pattern, text)
    assert quoted, f"docs/{page} no longer says {pattern!r}: update this test with the page"
    assert quoted.group(1) == figure(dev_plan), (
        f"docs/{page} quotes {quoted.group(0)!r}; the plan gives {figure(dev_plan)}"
    )


def test_two_runs_fit_the_quota_the_page_says_they_do(dev_plan):
    """operations.md says the quota holds two FSDP runs at once; so it must."""
    assert gpu_quota(dev_plan) >= 2 * fsdp_forecast(dev_plan)["gpus"]
