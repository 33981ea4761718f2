"""A pod's resource requests as Kubernetes computes them: quantities, containers, init containers, overhead.

One formula (component-helpers' PodRequests) for the scheduler's filter step (placement.py) and for Kueue's
quota (admission.py), which calls the same helper (`pkg/workload/workload.go` totalRequestsFromPodSets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from components.facts import gke

_QUANTITY = re.compile(gke.QUANTITY_PATTERN)


def parse_quantity(value: Any) -> float:
    """A Kubernetes quantity ("8", "500m", "16Gi", "200G", 2.0) as a number of base units."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = (match.group(1) or "") + match.group(2), match.group(6) or ""
    if suffix[:1] in ("e", "E"):
        return float(number + suffix)
    return float(number) * gke.QUANTITY_SUFFIXES[suffix]


def container_requests(container: Mapping[str, Any], names: Iterable[str] | None = None) -> dict[str, float]:
    """What a container asks for (of `names`, or every resource); where only a limit is set, it is the request."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    wanted = None if names is None else set(names)
    return {name: parse_quantity(value) for name, value in merged.items() if wanted is None or name in wanted}


def add_requests(total: dict[str, float], more: Mapping[str, float]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0.0) + amount


def pod_requests(spec: Mapping[str, Any], names: Iterable[str] | None = None) -> dict[str, float]:
    """component-helpers' PodRequests: containers and sidecars summed, the largest init container (with the
    sidecars started before it) where that is more, then the pod's overhead; of `names`, or every resource."""
    total: dict[str, float] = {}
    for container in spec.get("containers") or []:
        add_requests(total, container_requests(container, names))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for container in spec.get("initContainers") or []:
        requests = container_requests(container, names)
        if container.get("restartPolicy") == "Always":
            add_requests(sidecars, requests)
            continue
        for name, amount in requests.items():
            init_peak[name] = max(init_peak.get(name, 0.0), amount + sidecars.get(name, 0.0))
    add_requests(total, sidecars)
    for name, amount in init_peak.items():
        total[name] = max(total.get(name, 0.0), amount)
    overhead = {name: parse_quantity(value) for name, value in (spec.get("overhead") or {}).items()}
    add_requests(total, {name: amount for name, amount in overhead.items() if names is None or name in set(names)})
    return total
