"""`trainyard job submit FILE`: one job rendered by the stack's own builders and judged by the stack's own checks.

A job file holds one job in the schema of a `trainyard:jobs.maxtext[]` or `trainyard:jobs.fsdp[]` entry, plus
`kind: maxtext|fsdp`. The job is added to the stack's config and the stack is planned under mocks, as `trainyard
plan` plans it: the job's objects are then exactly those the stack would make for it (RayJob, or Job with its code
ConfigMap, its rendezvous Service and, on A4X, its ComputeDomain), and its verdicts those preflight gives (config,
schema, placement, Kueue admission beside the stack's own jobs, the policy pack, the forecast). Nothing of the stack
itself is sent: only the job's objects, labelled as submitted, so `pulumi up` never touches them and `trainyard job
list` tells them apart.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.config.load import ConfigError
from components.facts import gke, images, nvidia_dra
from preflight.checks import policy_runner
from preflight.engine.plan import Plan, plan_config
from preflight.engine.stack_files import read_stack_files
from preflight.report import forecast_summary
from preflight.verdict import Verdict, check
from runs import objects as o

JOB_LISTS = {"maxtext": "maxtext", "fsdp": "fsdp"}  # a job file's kind -> its list under trainyard:jobs
SUBMITTED_LABEL = "trainyard/submitted-by"
SUBMITTED_BY = "trainyard-job"
FIELD_MANAGER = "trainyard"
# What the stack makes for one job alone (its rendezvous Service, its ComputeDomain): a submitted job owns them, so
# they go with it. Not the code ConfigMap, which the stack's own jobs of the same code share.
OWNED_KINDS = ("Service", nvidia_dra.COMPUTE_DOMAIN_KIND)


class JobFileError(ValueError):
    """A job file that cannot be read or is refused: one line per problem, naming the file and key."""


@dataclass(frozen=True)
class JobFile:
    path: Path
    kind: str
    spec: dict[str, Any]  # the entry, as in the stack file, without `kind`

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))


@dataclass
class Rendered:
    job: JobFile
    plan: Plan
    verdict: Verdict
    objects: list[dict[str, Any]]  # what submit applies, in order: what the job's pods name first, then the job
    problems: list[str] = field(default_factory=list)  # this job's verdicts that fail it

    @property
    def job_object(self) -> dict[str, Any]:
        return self.objects[-1]

    @property
    def owned(self) -> list[dict[str, Any]]:
        """The objects the job owns once applied (OWNED_KINDS)."""
        return [m for m in self.objects if o.kind(m) in OWNED_KINDS]

    notes: list[str] = field(default_factory=list)  # admission, forecast, advisories

    @property
    def failed(self) -> bool:
        return bool(self.problems)


def read_job_file(path: Path) -> JobFile:
    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as error:
        raise JobFileError(f"{path}: cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise JobFileError(f"{path}{where}: is not YAML ({getattr(error, 'problem', error)})") from None
    if not isinstance(loaded, dict):
        raise JobFileError(f"{path}: holds a {type(loaded).__name__} (allowed: one job, a mapping with kind and name)")
    kind = loaded.pop("kind", None)
    if kind not in JOB_LISTS:
        raise JobFileError(f"{path}: kind: {json.dumps(kind)} is not a job kind (allowed: {', '.join(JOB_LISTS)})")
    return JobFile(path, kind, loaded)


def config_with_job(config: Mapping[str, str], job: JobFile) -> tuple[dict[str, str], str]:
    """The stack's raw config with the job appended to its list, enabled; and the job's config path there."""
    raw = dict(config)
    jobs = json.loads(raw.get("trainyard:jobs") or "{}")
    entries = list(jobs.get(JOB_LISTS[job.kind]) or [])
    path = f"trainyard:jobs.{JOB_LISTS[job.kind]}[{len(entries)}]"
    entries.append({**copy.deepcopy(job.spec), "enabled": True})
    raw["trainyard:jobs"] = json.dumps({**jobs, JOB_LISTS[job.kind]: entries})
    return raw, path


def render(job: JobFile, stack: str, project_dir: Path, pack_config: Mapping[str, Any] | None = None) -> Rendered:
    """Plan the stack with the job in it; the job's objects and its verdicts. JobFileError where the stack refuses
    the job's config (the problems renamed to the job file's keys)."""
    files = read_stack_files(project_dir, stack)
    raw, path = config_with_job(files.config, job)
    try:
        plan = plan_config(files.project, stack, files.main, raw, files.secret_keys)
    except ConfigError as error:
        raise JobFileError(_in_job_file(str(error), path, job.path)) from None
    verdict = check(plan, dict(pack_config or {}))
    objects = job_objects(plan.manifests, job.name)
    if not objects:
        raise JobFileError(f"{job.path}: the stack made no object for job {job.name!r}")
    rendered = Rendered(job, plan, verdict, objects)
    _judge(rendered, path)
    return rendered


def job_objects(manifests: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The job's own objects (its workload label), labelled as submitted, after what its pods need that the stack
    makes for that job alone: the ConfigMaps they mount, the headless Service their subdomain names (a multi-node
    FSDP job's rendezvous) and the ComputeDomain whose channel they claim (A4X)."""
    own = [m for m in manifests if o.labels(m).get(gke.WORKLOAD_LABEL) == name and o.kind(m) in ("Job", "RayJob")]
    specs = [t.get("spec") or {} for m in own for t in o.pod_templates(m)]
    mounted = {v["configMap"]["name"] for spec in specs for v in spec.get("volumes") or [] if "configMap" in v}
    subdomains = {spec["subdomain"] for spec in specs if spec.get("subdomain")}
    claimed = {c.get("resourceClaimTemplateName") for spec in specs for c in spec.get("resourceClaims") or []}
    needed = [m for m in manifests if o.kind(m) == "ConfigMap" and o.name(m) in mounted]
    needed += [m for m in manifests if o.kind(m) == "Service" and o.name(m) in subdomains]
    needed += [
        m
        for m in manifests
        if o.kind(m) == nvidia_dra.COMPUTE_DOMAIN_KIND and nvidia_dra.channel_template_of(m) in claimed
    ]
    submitted = []
    for manifest in own:
        manifest = copy.deepcopy(manifest)
        manifest["metadata"].setdefault("labels", {})[SUBMITTED_LABEL] = SUBMITTED_BY
        submitted.append(manifest)
    return [*needed, *submitted]


def _judge(rendered: Rendered, path: str) -> None:
    verdict, name = rendered.verdict, rendered.job.name
    mine = {f"{m['kind']} {m['metadata'].get('namespace')}/{o.name(m)}" for m in rendered.objects}
    urns = {r.urn for r in rendered.plan.resources if o.name(r.inputs) in {o.name(m) for m in rendered.objects}}
    rendered.problems += [str(p) for p in verdict.schemas.problems if p.obj in mine]
    rendered.problems += [str(p) for p in verdict.placement if p.workload in mine]
    rendered.problems += [
        _in_job_file(str(p), path, rendered.job.path) for p in verdict.admission if p.workload in mine
    ]
    for policy in verdict.policies:
        if policy.urn in urns:
            target = rendered.problems if policy.level == "mandatory" else rendered.notes
            target.append(f"policy {policy.policy} ({policy.level}): {policy.message}")
    rendered.notes += [f"{a.workload}: admitted on {a.flavor_list}" for a in verdict.admitted if a.workload in mine]
    for forecast in verdict.forecast:
        if forecast.job == name:
            rendered.notes.append(f"forecast: {forecast_summary(forecast.to_json())}")


def _in_job_file(text: str, path: str, job_path: Path) -> str:
    """`trainyard:jobs.fsdp[1].args.x: ...` -> `job.yaml: args.x: ...`: the key the user edits is in the job file."""
    text = re.sub(re.escape(path) + r"\.", f"{job_path}: ", text)
    return text.replace(path, str(job_path))


def load_pack_config(stack: str, project_dir: Path, pack_config: Path | None) -> dict[str, Any]:
    if pack_config:
        return policy_runner.load_pack_config(pack_config)
    return policy_runner.pack_config_for_stack(stack, project_dir)


def pin_image(objects: list[dict[str, Any]], kind: str, image: str) -> int:
    """Put `image` (by digest) in place of the stack-built trainer image the plan shows (the mocks' digest is not
    the registry's); the containers changed."""
    if "@" not in image or images.pin_problem(image) is not None:
        raise JobFileError(f"--image: {image!r} is not pinned by digest (allowed: REGISTRY/PATH@sha256:<64 hex>)")
    trainer = f"/{kind}"
    changed = 0
    for manifest in objects:
        for template in o.pod_templates(manifest):
            for container in (template.get("spec") or {}).get("containers") or []:
                if str(container.get("image", "")).split("@")[0].rsplit(":", 1)[0].endswith(trainer):
                    container["image"] = image
                    changed += 1
    return changed
