"""What preflight concludes about a plan: `check` runs every check in its order (schemas first; placement and
admission on the objects the API server accepts), and `Verdict` holds the outcome, failed or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from components.config.job_checks import driver_summary
from components.config.load import load_stack_config
from components.facts import cost
from preflight.checks import policy_runner
from preflight.checks.admission import Admission, AdmissionProblem, check_admission, workload_config_keys
from preflight.checks.api_limits import limit_problems
from preflight.checks.kube_schemas import SchemaCheck, check_manifests
from preflight.checks.placement import PlacementProblem, check_placement, with_config_key
from preflight.checks.provider_inputs import ProviderInputProblem, check_provider_inputs
from preflight.engine.plan import Plan, accepted_resources
from preflight.forecast.report import AnyForecast, pack_config_with_forecast, stack_forecasts


@dataclass
class Verdict:
    """Everything preflight concludes about a plan."""

    schemas: SchemaCheck
    placement: list[PlacementProblem]
    pod_templates: int
    admitted: list[Admission]
    admission: list[AdmissionProblem]  # workloads Kueue would never admit
    provider_inputs: list[ProviderInputProblem]
    policies: list[policy_runner.Verdict]
    cost: cost.StackCost
    forecast: list[AnyForecast] = field(default_factory=list)
    gpu_software: list[str] = field(default_factory=list)  # per GPU pool: what its nodes carry, the driver it needs
    strict_schemas: bool = False

    @property
    def failed(self) -> bool:
        unchecked_fails = self.strict_schemas and bool(self.schemas.unchecked)
        return (
            bool(self.schemas.problems)
            or unchecked_fails
            or bool(self.placement)
            or bool(self.admission)
            or any(result.cannot_run or result.undecided for result in self.forecast)
            or bool(self.provider_inputs)
            or policy_runner.has_mandatory(self.policies)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaProblems": [{"object": p.obj, "path": p.path, "reason": p.reason} for p in self.schemas.problems],
            "schemaUnchecked": self.schemas.unchecked,
            "providerInputProblems": [
                {"resource": p.resource, "path": p.path, "reason": p.reason} for p in self.provider_inputs
            ],
            "placementProblems": [
                {"workload": p.workload, "where": p.where, "reason": p.reason} for p in self.placement
            ],
            "admission": {
                "admitted": [{"workload": a.workload, "flavors": a.flavors} for a in self.admitted],
                "problems": [
                    {"workload": p.workload, "podSet": p.pod_set, "reason": p.reason, "configKey": p.key}
                    for p in self.admission
                ],
            },
            "policies": [verdict.to_json() for verdict in self.policies],
            "cost": self.cost.to_json(),
            "forecast": [result.to_json() for result in self.forecast],
            "gpuSoftware": self.gpu_software,
        }


def check(plan: Plan, pack_config: dict[str, Any], strict_schemas: bool = False) -> Verdict:
    plan_json = plan.to_json()
    config = load_stack_config(plan.config, plan.stack)
    schemas = check_manifests(plan.manifests, config.cluster.version)
    accepted = accepted_resources(plan_json["resources"], schemas.refused)
    job_keys = workload_config_keys(config)
    pod_templates, placement = check_placement(accepted)
    placement = [with_config_key(problem, job_keys) for problem in placement]
    admitted, admission = check_admission(accepted, job_keys)
    forecasts = stack_forecasts(config)
    return Verdict(
        schemas=schemas.adding(limit_problems(plan.manifests, config.network.service_range)),
        placement=placement,
        pod_templates=pod_templates,
        admitted=admitted,
        admission=admission,
        provider_inputs=check_provider_inputs(plan_json["resources"]),
        policies=policy_runner.evaluate(plan_json, pack_config_with_forecast(pack_config, forecasts)),
        cost=cost.estimate(plan_json["resources"]),
        forecast=forecasts,
        gpu_software=[driver_summary(config, pool) for pool in config.gpu_pools],
        strict_schemas=strict_schemas,
    )
