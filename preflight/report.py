"""The plan as a person reads it: a tree of components and resources with their key settings, and what each
job became (where it runs, its mesh or world size, image, queue, admission and forecast)."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from components.config.jobs import MaxTextJobConfig
from components.config.models import StackConfig, TpuSliceConfig
from components.facts import cost, gke, images
from components.facts.capacity import node_pool_capacity
from components.jobs.ray_workloads import maxtext_arguments, slice_range
from preflight.checks.admission import Admission, AdmissionProblem
from preflight.checks.pods import pod_requests
from preflight.engine.mocks import Registration
from workloads.maxtext.parallelism import ParallelismError, check_parallelism, parse_overrides


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _pool_size(inputs: Mapping[str, Any]) -> str:
    size = cost.pool_size(inputs)
    if size.autoscaled:
        return f"nodes {size.min_nodes}..{size.max_nodes}"
    return f"nodes {size.max_nodes}"


def _node_pool(inputs: Mapping[str, Any]) -> list[str]:
    node_config = inputs.get("nodeConfig") or {}
    details = [node_config.get("machineType", "?"), _pool_size(inputs), node_pool_capacity(inputs)]
    topology = (inputs.get("placementPolicy") or {}).get("tpuTopology")
    if topology:
        details.insert(1, f"topology {topology}")
    accelerators = node_config.get("guestAccelerators") or []
    details += [f"{_number(acc.get('count'))} x {acc.get('type')}" for acc in accelerators]
    networks = (inputs.get("networkConfig") or {}).get("additionalNodeNetworkConfigs") or []
    if networks:
        details.append(f"+{len(networks)} NICs")
    return details


def _cluster(inputs: Mapping[str, Any]) -> list[str]:
    channel = (inputs.get("releaseChannel") or {}).get("channel")
    return [inputs.get("location", "?"), f"version {inputs.get('minMasterVersion')}", f"channel {channel}"]


def _image_build(inputs: Mapping[str, Any]) -> list[str]:
    """Where it builds from and the tag it pushes (the repository's line holds the registry path)."""
    dockerfile = (inputs.get("dockerfile") or {}).get("location", "?")
    pushed = [tag.rsplit("/", 1)[-1] for tag in inputs.get("tags") or []] if inputs.get("push") else []
    return [dockerfile, *(f"push {tag}" for tag in pushed)]


def _repository(inputs: Mapping[str, Any]) -> list[str]:
    path = images.repository_path(inputs.get("location", "?"), inputs.get("project", "?"), inputs.get("repositoryId"))
    return [path, inputs.get("format", "?")]


SUMMARIES: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    gke.NETWORK_TYPE: lambda i: (
        [f"MTU {_number(i.get('mtu'))}"] + (["RDMA profile"] if i.get("networkProfile") else [])
    ),
    gke.SUBNETWORK_TYPE: lambda i: [i.get("ipCidrRange", "?")],
    gke.CLUSTER_TYPE: _cluster,
    gke.NODE_POOL_TYPE: _node_pool,
    gke.BUCKET_TYPE: lambda i: [i.get("location", "?")],
    images.IMAGE_BUILD_TYPE: _image_build,
    images.REPOSITORY_TYPE: _repository,
}


def summary(resource: Registration) -> str:
    describe = SUMMARIES.get(resource.type)
    details = describe(resource.inputs) if describe else []
    # The tree names the kind only (the full type tokens are counted under "Resources by type"), to fit 100 columns.
    kind = resource.type.rsplit(":", 1)[-1]
    if resource.type.startswith("pulumi:providers:"):
        kind = f"{kind} provider"
    return "  ".join([kind, resource.name, *([f"[{', '.join(details)}]"] if details else [])])


# Components that apply an upstream release whole: the tree folds their many objects (RBAC, CRDs, webhooks) into
# one line and shows only what runs.
FOLDED_COMPONENTS = ("trainyard:k8s:KueueRelease",)
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")


def _tree_lines(resources: list[Registration]) -> Iterator[str]:
    children: dict[str | None, list[Registration]] = {}
    urns = {resource.urn for resource in resources}
    for resource in resources:
        parent = resource.parent if resource.parent in urns else None
        children.setdefault(parent, []).append(resource)

    def walk(parent: str | None, depth: int) -> Iterator[str]:
        for resource in children.get(parent, []):
            if resource.type in FOLDED_COMPONENTS:
                yield from folded(resource, depth)
                continue
            yield "  " * depth + ("" if resource.custom else "+ ") + summary(resource)
            yield from walk(resource.urn, depth + 1)

    def folded(component: Registration, depth: int) -> Iterator[str]:
        """An upstream release: one line with its counts, then only its workloads (what runs)."""
        objects = children.get(component.urn, [])
        kinds = Counter(resource.type.rsplit(":", 1)[-1] for resource in objects)
        yield "  " * depth + f"+ {summary(component)}  [{len(objects)} objects of {len(kinds)} kinds; --json has each]"
        for resource in objects:
            if resource.type.rsplit(":", 1)[-1] in WORKLOAD_KINDS:
                yield "  " * (depth + 1) + summary(resource)

    yield from walk(None, 0)


def render_plan(project: str, stack: str, resources: list[Registration]) -> str:
    counts = Counter(resource.type for resource in resources if resource.custom)
    lines = [f"Plan for {project}/{stack}: {sum(counts.values())} resources", ""]
    lines += _tree_lines(resources)
    lines += ["", "Resources by type:"]
    lines += [f"  {count:4d}  {type_}" for type_, count in sorted(counts.items())]
    return "\n".join(lines)


# ---- what each job became: one short block per enabled job, read from the objects the plan would apply ----

JOB_KINDS = ("RayJob", "RayCluster", "Job")
MAXTEXT_TRAINER, FSDP_TRAINER = "workloads.maxtext.train", "workloads.fsdp.train"
TRAINERS = {MAXTEXT_TRAINER: "MaxText", FSDP_TRAINER: "FSDP"}


def _containers(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return (template.get("spec") or {}).get("containers") or []


def _node_selector(template: Mapping[str, Any]) -> Mapping[str, str]:
    return (template.get("spec") or {}).get("nodeSelector") or {}


def _image(template: Mapping[str, Any]) -> str:
    return short_image(str(next(iter(_containers(template)), {}).get("image", "?")))


def _per_pod(template: Mapping[str, Any], resource: str) -> int:
    """How many of `resource` one pod of the template asks for, as Kubernetes sums a pod's requests."""
    return int(pod_requests(template.get("spec") or {}, [resource]).get(resource, 0))


def short_image(image: str) -> str:
    """`registry/.../maxtext:tag@sha256:<64 hex>` as `maxtext:tag@sha256:<12 hex>` (the tree shows the registry)."""
    name, at, digest = image.rpartition("/")[2].partition("@")
    return f"{name}{at}{digest[: len('sha256:') + 12]}" if at else name


@dataclass(frozen=True)
class JobInputs:
    """What the report says of a job from the stack config that made it, not from its rendered command."""

    trainer: str  # "MaxText", "FSDP"
    mesh: str | None = None  # a MaxText job's resolved mesh


def job_inputs(config: StackConfig) -> dict[str, JobInputs]:
    """Each enabled job of the config by name (its objects' workload label)."""
    groups = {group.name: group for group in config.tpu_slices}
    found = {job.name: JobInputs(TRAINERS[FSDP_TRAINER]) for job in config.jobs.enabled_fsdp}
    for job in config.jobs.enabled_maxtext:
        group = groups.get(job.slices)
        found[job.name] = JobInputs(TRAINERS[MAXTEXT_TRAINER], maxtext_mesh(job, group) if group else None)
    return found


def maxtext_mesh(job: MaxTextJobConfig, group: TpuSliceConfig) -> str:
    """The MaxText mesh the trainer will build from the job's arguments, by its own rule
    (workloads/maxtext/parallelism.py), for the most slices the job runs on."""
    try:
        overrides = parse_overrides(maxtext_arguments(job, group))
        mesh = check_parallelism(overrides, group.slice.devices, slice_range(job, group)[1])
    except (ValueError, ParallelismError) as error:
        return f"not resolved ({error})"
    kinds = [(kind, axes) for kind, axes in (("ici", mesh.ici), ("dcn", mesh.dcn)) if axes]
    return "; ".join(f"{kind} " + " x ".join(f"{axis}={size}" for axis, size in axes.items()) for kind, axes in kinds)


def _slices_row(group: Mapping[str, Any]) -> tuple[str, str]:
    """Where a Ray worker group runs: its slices (a range when elastic), hosts and chips."""
    template = group.get("template") or {}
    slices, hosts = int(group.get("replicas", 0)), int(group.get("numOfHosts", 1))
    fewest = int(group.get("minReplicas", slices))
    count = f"{fewest}..{slices}" if fewest != slices else str(slices)
    chips = _per_pod(template, gke.TPU_RESOURCE)
    if not chips:
        return "runs on", f"{count} x {hosts} CPU workers ({group.get('groupName')})"
    selector = _node_selector(template)
    shape = f"{selector.get(gke.TPU_ACCELERATOR_LABEL, '?')} {selector.get(gke.TPU_TOPOLOGY_LABEL, '?')}"
    where = f"{count} slices of group {group.get('groupName')} ({shape}): {hosts} hosts x {chips} chips each"
    return "runs on", f"{where}, {slices * hosts * chips} chips"


def _ray_rows(manifest: Mapping[str, Any], inputs: JobInputs | None) -> list[tuple[str, str]]:
    spec = manifest.get("spec") or {}
    cluster = spec.get("rayClusterSpec") or spec  # a RayJob's cluster, or a RayCluster's own spec
    rows = [_slices_row(group) for group in cluster.get("workerGroupSpecs") or []]
    if inputs and inputs.mesh:
        rows.append(("mesh", inputs.mesh))
    return [*rows, ("image", _image((cluster.get("headGroupSpec") or {}).get("template") or {}))]


def _job_rows(manifest: Mapping[str, Any], pool: str, inputs: JobInputs | None) -> list[tuple[str, str]]:
    spec = manifest.get("spec") or {}
    template = spec.get("template") or {}
    selector = _node_selector(template)
    pods = int(spec.get("parallelism") or spec.get("completions") or 1)
    gpus, chips = _per_pod(template, gke.GPU_RESOURCE), _per_pod(template, gke.TPU_RESOURCE)
    if gpus:
        accelerator = selector.get(gke.GPU_ACCELERATOR_LABEL, "GPU")
        rows = [("runs on", f"{pool}{pods} pods x {gpus} {accelerator} = {pods * gpus} GPUs")]
        if inputs and inputs.trainer == TRAINERS[FSDP_TRAINER]:  # launched by torchrun, a process per GPU
            rows.append(("world", f"{pods * gpus} processes ({pods} nodes x {gpus}, torchrun)"))
    elif chips:
        shape = f"{selector.get(gke.TPU_ACCELERATOR_LABEL, '?')} {selector.get(gke.TPU_TOPOLOGY_LABEL, '?')}"
        rows = [("runs on", f"{pool}{pods} pods x {chips} chips ({shape}) = {pods * chips} chips")]
    else:
        rows = [("runs on", f"{pods} pods, no accelerator")]
    return [*rows, ("image", _image(template))]


def forecast_summary(forecast: Mapping[str, Any]) -> str:
    """A forecast's JSON (preflight/forecast/) in one line: step, MFU and what the run or its window costs."""
    if "none" in forecast:
        label = (
            "DOES NOT FIT"
            if forecast.get("cannotRun")
            else "TOO CLOSE TO CALL"
            if forecast.get("undecided")
            else "none"
        )
        return f"{label}: {forecast['none']}"
    usd = "~$" if forecast.get("priceEstimated") else "$"
    parts = []
    if "stepSeconds" in forecast:
        parts.append(f"step {forecast['stepSeconds']:.1f} s")
    if "mfu" in forecast:
        parts.append(f"MFU {forecast['mfu']:.1%}")
    if "usdPerRun" in forecast:
        parts.append(f"{forecast.get('steps', '?')} steps {usd}{forecast['usdPerRun']:,.2f}")
    elif "usdPerWindow" in forecast:
        hours = forecast.get("windowSeconds", 0) / 3600
        parts.append(
            f"{hours:g} h window: {forecast.get('stepsInWindow', '?')} steps {usd}{forecast['usdPerWindow']:,.0f}"
        )
    if forecast.get("source") == "instant":
        parts.append("instant")
    summary = ", ".join(parts) or "see the Forecast section"
    return f"TOO CLOSE TO CALL (no HBM estimate): {summary}" if forecast.get("undecided") else summary


def _queue_row(
    manifest: Mapping[str, Any], admitted: Mapping[str, Admission], problems: Mapping[str, list[AdmissionProblem]]
) -> str:
    metadata = manifest.get("metadata") or {}
    queue = (metadata.get("labels") or {}).get(gke.QUEUE_LABEL)
    if not queue:
        return "none: starts without Kueue"
    workload = f"{manifest.get('kind')} {metadata.get('namespace')}/{metadata.get('name')}"
    if workload in problems:
        return f"{queue}: NOT ADMITTED: " + "; ".join(f"{p.reason} (change {p.key})" for p in problems[workload])
    if workload in admitted:
        return f"{queue}: admitted on {admitted[workload].flavor_list}"
    return f"{queue}: not checked"


def render_jobs(
    manifests: Iterable[Mapping[str, Any]],
    admitted: Iterable[Admission],
    problems: Iterable[AdmissionProblem],
    forecasts: Iterable[Mapping[str, Any]],
    inputs: Mapping[str, JobInputs] | None = None,
    width: int = 98,
) -> list[str]:
    """One block per job object the plan applies: what it is, where it runs, its size, image, queue, forecast;
    each line within `width` columns, a longer value wrapped under itself. `inputs`: the config's jobs by name
    (job_inputs), for the trainer and the mesh."""
    inputs = inputs or {}
    by_workload = {admission.workload: admission for admission in admitted}
    problems_of: dict[str, list[AdmissionProblem]] = {}
    for problem in problems:
        problems_of.setdefault(problem.workload, []).append(problem)
    forecast_of = {str(forecast.get("job")): forecast for forecast in forecasts}
    lines = []
    for manifest in manifests:
        if manifest.get("kind") not in JOB_KINDS:
            continue
        metadata = manifest.get("metadata") or {}
        job = (metadata.get("labels") or {}).get(gke.WORKLOAD_LABEL) or metadata.get("name")
        workload = f"{manifest['kind']} {metadata.get('namespace')}/{metadata.get('name')}"
        given = inputs.get(job)
        lines.append(f"{job}: {workload}{f' ({given.trainer})' if given else ''}")
        flavors = by_workload[workload].flavors.values() if workload in by_workload else []
        pool = f"pool {', '.join(sorted(set(flavors)))}: " if flavors else ""  # Kueue's flavors are the pools
        rows = _job_rows(manifest, pool, given) if manifest["kind"] == "Job" else _ray_rows(manifest, given)
        rows.append(("queue", _queue_row(manifest, by_workload, problems_of)))
        if job in forecast_of:
            rows.append(("forecast", forecast_summary(forecast_of[job])))
        for label, value in rows:
            lines += textwrap.wrap(f"  {label:<9} {value}", width, subsequent_indent=" " * 12, break_on_hyphens=False)
    return lines
