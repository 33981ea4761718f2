"""What the API server refuses by size (preflight/checks/api_limits.py), on the dev plan's own objects."""

from __future__ import annotations

import copy
from ipaddress import IPv4Network

from preflight.checks.api_limits import cluster_ip_services, limit_problems, service_addresses

DEV_RANGE = IPv4Network("10.65.0.0/19")


def test_the_dev_plan_is_within_every_limit(dev_plan):
    assert limit_problems(dev_plan.manifests, DEV_RANGE) == []


def test_a_service_range_too_small_for_the_clusters_services_is_refused_with_the_smallest_that_fits(dev_plan):
    taken = cluster_ip_services(dev_plan.manifests)
    assert any("RayJob" in name and "head Service" in name for name in taken)  # KubeRay's, made at run time
    headless = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}
    assert cluster_ip_services([*dev_plan.manifests, headless]) == taken  # a headless Service takes no address
    (problem,) = limit_problems(dev_plan.manifests, IPv4Network("10.65.0.0/29"))
    assert str(problem).startswith("trainyard:network.serviceRange 10.65.0.0/29: <object>: has 6 Service addresses")
    assert f"the stack's {len(taken)}" in problem.reason and "(allowed: a /27 or larger range)" in problem.reason
    assert service_addresses(IPv4Network("10.65.0.0/27")) == 30  # all but the network and broadcast addresses


def test_an_object_over_etcds_limit_and_a_configmap_over_1_mib_are_refused(dev_plan):
    config_map = copy.deepcopy(next(m for m in dev_plan.manifests if m["kind"] == "ConfigMap"))
    config_map["data"] = {"big.py": "x" * 1_100_000}
    (problem,) = limit_problems([config_map], DEV_RANGE)
    assert problem.path == "data" and "holds 1,100,006 bytes, more than a ConfigMap's 1,048,576" in problem.reason
    config_map["data"] = {"big.py": "x" * 1_600_000}
    reasons = [problem.reason for problem in limit_problems([config_map], DEV_RANGE)]
    assert any("more than the 1,572,864 etcd stores in one object" in reason for reason in reasons)
