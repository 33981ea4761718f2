"""Checks of trainyard:jobs and trainyard:kueue against the pools: jobs name slices and pools that exist, and fit."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from components.config.jobs import (
    TRAINER_FLAGS,
    FsdpJobConfig,
    MaxTextJobConfig,
    parsed_trainer_config,
    trainer_argv,
    trainer_refusal,
)
from components.config.maxtext_args import maxtext_argument_problems
from components.config.models import GpuPoolConfig, StackConfig
from components.config.problem import UNSET, ConfigProblem, reason
from components.config.shared_checks import shared_problems
from components.facts import gpu_software, maxtext, node_shapes, topology
from components.facts.models import known_architecture
from components.facts.secrets import carries_a_secret, looks_like_a_secret, masked


def job_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    groups = {group.name: group for group in config.tpu_slices}
    pools = {pool.name: pool for pool in config.gpu_pools}
    # A token in an argument sits in clear text in the stack file, parked job or not.
    for index, job in enumerate(config.jobs.maxtext):
        yield from _secret_problems(f"trainyard:jobs.maxtext[{index}].extraArgs", job.extra_args, SECRET_ROUTE)
        yield from _token_key_problems(f"trainyard:jobs.maxtext[{index}]", job.hf_token_key)
        yield from _gated_secret_problems(f"trainyard:jobs.maxtext[{index}].gated", job.gated)
    for index, job in enumerate(config.jobs.fsdp):
        yield from _secret_problems(f"trainyard:jobs.fsdp[{index}].args", job.args, SECRET_ROUTE)
        yield from _token_key_problems(f"trainyard:jobs.fsdp[{index}]", job.hf_token_key)
        yield from _gated_secret_problems(f"trainyard:jobs.fsdp[{index}].gated", job.gated)
    yield from _libtpu_secret_problems(config.jobs.ray.libtpu_init_args)
    # Jobs switched off are parked: they are checked against the slices and pools, and their arguments against
    # the trainer, when switched on.
    for index, job in enumerate(config.jobs.maxtext):
        if not job.enabled:
            continue
        path = f"trainyard:jobs.maxtext[{index}]"
        extra_args = {key: value for key, value in job.extra_args.items() if not carries_a_secret(key, value)}
        yield from _set_by_trainyard_problems(path, job, extra_args)
        group = groups.get(job.slices)
        if group is None:
            yield ConfigProblem(
                f"{path}.slices", job.slices, f"is not a trainyard:tpuSlices name (allowed: {_names(groups)})"
            )
            continue
        if reason := maxtext.unknown_model(job.model_name):
            yield ConfigProblem(f"{path}.modelName", job.model_name, reason)
        else:
            yield from maxtext_argument_problems(path, job, extra_args)
        range_problems = list(_slice_range_problems(path, job, group.count))
        yield from range_problems
        try:
            devices = group.slice.devices
        except topology.TopologyError:
            continue  # reported against the slice group
        axis_problems = [*_axis_problems(f"{path}.ici", job.ici), *_axis_problems(f"{path}.dcn", job.dcn)]
        axis_problems += _mesh_in_extra_args_problems(path, extra_args)
        yield from axis_problems
        if range_problems or axis_problems:
            continue
        job_range = maxtext.job_slice_range(group.count, job.min_slices, job.max_slices)
        for kind, message in maxtext.mesh_errors(job.ici, job.dcn, extra_args, devices, job_range).items():
            yield ConfigProblem(f"{path}.{kind}", getattr(job, kind), f"cannot run: {message}")
    for index, job in enumerate(config.jobs.fsdp):
        if not job.enabled:
            continue
        path = f"trainyard:jobs.fsdp[{index}]"
        yield from _trainer_args_problems(f"{path}.args", job)
        yield from _architecture_problems(f"{path}.architecture", job)
        pool = pools.get(job.pool)
        if pool is None:
            yield ConfigProblem(
                f"{path}.pool", job.pool, f"is not a trainyard:gpuPools name (allowed: {_names(pools)})"
            )
        elif job.nodes > pool.max_nodes:
            yield ConfigProblem(
                f"{path}.nodes", job.nodes, f"is more than pool {pool.name}'s maxNodes (allowed: 1 to {pool.max_nodes})"
            )
    yield from shared_problems(config)
    yield from _flavor_problems(config)
    yield from _driver_problems(config)


def _names(named: dict[str, Any]) -> str:
    return ", ".join(named) or "none configured"


def _slice_range_problems(path: str, job: MaxTextJobConfig, count: int) -> Iterator[ConfigProblem]:
    highest = maxtext.job_slice_range(count, None, job.max_slices)[1]
    if job.max_slices is not None and job.max_slices > count:
        yield ConfigProblem(
            f"{path}.maxSlices",
            job.max_slices,
            f"is more than the {count} slices of {job.slices} (allowed: 1 to {count})",
        )
    if job.min_slices is not None and job.min_slices > highest:
        yield ConfigProblem(f"{path}.minSlices", job.min_slices, f"is above maxSlices (allowed: 1 to {highest})")


def _mesh_in_extra_args_problems(path: str, extra_args: dict[str, str]) -> list[ConfigProblem]:
    """A mesh size in extraArgs would silently override ici/dcn: it has one place, and that is ici/dcn."""
    problems = []
    for key, value in extra_args.items():
        if match := maxtext.PARALLELISM_ARGUMENT.match(key):
            kind, axis = match.groups()
            problems.append(
                ConfigProblem(
                    f"{path}.extraArgs.{key}", value, f"is a mesh size (allowed: set it as {path}.{kind}.{axis})"
                )
            )
    return problems


def _set_by_trainyard_problems(
    path: str, job: MaxTextJobConfig, extra_args: Mapping[str, str]
) -> Iterator[ConfigProblem]:
    """An argument trainyard sets from the job's own keys would be overridden by extraArgs (they come last), while
    the checks, the forecast and the RayJob read the key: each argument has one place, and that is the key."""
    fields = type(job).model_fields
    for key in job.own_arguments(""):
        if key not in extra_args:
            continue
        if key in fields:
            allowed = f"use {path}.{fields[key].alias}"
        else:  # base_output_directory: the stack's bucket, mounted on every pod
            allowed = f"none; each run writes to the stack's bucket, in a folder named by {path}.runName"
        yield ConfigProblem(f"{path}.extraArgs.{key}", extra_args[key], f"is set by trainyard (allowed: {allowed})")


SECRET_ROUTE = (
    "a Hugging Face token reaches the trainer only through a Kubernetes Secret: set hfTokenKey and "
    "`pulumi config set --secret huggingface:token hf_...`"
)


def _secret_problems(path: str, arguments: Mapping[str, str], route: str) -> Iterator[ConfigProblem]:
    """A token in a trainer argument would sit in clear text in the stack file, Pulumi's state and the pod spec."""
    for key, value in arguments.items():
        if carries_a_secret(key, value):
            yield ConfigProblem(
                f"{path}.{key}",
                masked(value),
                f"is a secret in clear text, in the stack file, the state and the pod spec (allowed: {route})",
            )


def _libtpu_secret_problems(arguments: Sequence[str]) -> Iterator[ConfigProblem]:
    """LIBTPU_INIT_ARGS is a container env value in clear text on every TPU worker."""
    for index, argument in enumerate(arguments):
        flag, _, value = argument.lstrip("-").partition("=")
        if carries_a_secret(flag, value):
            yield ConfigProblem(
                f"trainyard:jobs.ray.libtpuInitArgs[{index}]",
                masked(argument),
                "is a secret in clear text, in the stack file, the state and the pod spec (allowed: XLA and libtpu "
                "flags only)",
            )


def _gated_secret_problems(path: str, gated: Sequence[str] | None) -> Iterator[ConfigProblem]:
    """gated names repositories; a token pasted there would sit in clear text in the stack file and the state."""
    for index, repository in enumerate(gated or ()):
        if looks_like_a_secret(repository):
            yield ConfigProblem(
                f"{path}[{index}]",
                masked(repository),
                f"is a secret in clear text, not a repository (allowed: Hugging Face repository names such as "
                f"meta-llama/Llama-3.1-8B; {SECRET_ROUTE})",
            )


# Namespaces whose keys the stack or its providers read as settings: a token key there names a setting, and the
# token check would then tell the user to make that setting (gcp:project) a secret.
SETTING_NAMESPACES = {"trainyard": "the typed trainyard namespace", "gcp": "the GCP provider's settings"}
SETTING_NAMESPACES |= {"kubernetes": "the Kubernetes provider's settings", "pulumi": "Pulumi's own settings"}


def _token_key_problems(path: str, hf_token_key: str | None) -> Iterator[ConfigProblem]:
    namespace = (hf_token_key or "").split(":", 1)[0]
    if hf_token_key and ":" in hf_token_key and namespace in SETTING_NAMESPACES:
        yield ConfigProblem(
            f"{path}.hfTokenKey",
            hf_token_key,
            f"is in {SETTING_NAMESPACES[namespace]}, not a token (allowed: a key of its own in another namespace, "
            "e.g. huggingface:token)",
        )


# torch_workloads names a folder per revision; the trainer takes any path as --output-dir.
_ANY_OUTPUT_DIR = "/data/fsdp"
# Another folder would let two revisions (updatePolicy keep) write the same checkpoints and export.
_OUTPUT_FOLDER = "each revision writes to its own folder, fsdp/<name>/<revision> on the stack's bucket"
# How the trainer words a refusal (workloads/fsdp/config.py): `--flag='value' is not valid: expected ...` or
# `--flag / ENV = value is not allowed: ...`; argparse's: `argument --flag/--alias: expected one argument`.
_TRAINER_REFUSAL = re.compile(
    r"^--(?P<flag>[a-z0-9-]+)(?: / \w+ = |=)(?P<value>.*?) is not (?P<verdict>valid|allowed): (?P<allowed>.*)$"
)
_ARGPARSE_REFUSAL = re.compile(r"^argument --(?P<flag>[a-z0-9-]+)\S*: (?P<words>.*)$")


def _trainer_flag_problem(path: str, key: str, value: str, seen: dict[str, str]) -> ConfigProblem | None:
    """A key that is not exactly one of the trainer's flags (argparse would take an abbreviation, which nothing
    else here reads), or a second name of a flag given already (--peft, --lora)."""
    field = TRAINER_FLAGS.get(key)
    if field is None:
        close = difflib.get_close_matches(key, sorted(TRAINER_FLAGS), n=3, cutoff=0.6)
        allowed = (
            f"{', '.join(close)} or another flag of `python -m workloads.fsdp.train --help`"
            if close
            else ", ".join(TRAINER_FLAGS)
        )
        return ConfigProblem(f"{path}.{key}", value, f"is not a flag of the FSDP trainer (allowed: {allowed})")
    if field in seen:
        return ConfigProblem(
            f"{path}.{key}", value, f"sets the trainer's {field}, as {path}.{seen[field]} does (allowed: one of them)"
        )
    seen[field] = key
    return None


def _trainer_words(refusal: str) -> tuple[str | None, str]:
    """(the flag the trainer's refusal names, what it says in this config's words)."""
    if match := _TRAINER_REFUSAL.match(refusal):
        allowed = match["allowed"]
        for lead in ("expected ", "choose ", "must be "):
            allowed = allowed.removeprefix(lead)
        allowed = re.sub(r"\ba (?=[aeiou])", "an ", allowed)  # the trainer's "a int"
        verdict = "is not valid for" if match["verdict"] == "valid" else "is not allowed by"
        return match["flag"], f"{verdict} the FSDP trainer (allowed: {allowed})"
    if match := _ARGPARSE_REFUSAL.match(refusal):
        words = match["words"]
        if words == "expected one argument":  # argparse read the value as a flag
            words += " (allowed: a value that does not start with '-', or a plain negative number)"
        return match["flag"], f"is refused by the FSDP trainer's parser: {words}"
    return None, f"is refused by the FSDP trainer: {refusal}"


def _trainer_args_problems(path: str, job: FsdpJobConfig) -> Iterator[ConfigProblem]:
    """The trainer's own parser and rules (workloads/fsdp/config.py) on the flags trainyard would give it. Each
    refusal names one flag; the rest are parsed again without it, so every bad flag is reported at once."""
    remaining: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in job.args.items():
        if carries_a_secret(key, value):
            continue  # reported as a secret, and never shown
        if TRAINER_FLAGS.get(key) == "output_dir":
            yield ConfigProblem(f"{path}.{key}", value, f"is set by trainyard (allowed: none; {_OUTPUT_FOLDER})")
            continue
        if problem := _trainer_flag_problem(path, key, value, seen):
            yield problem
        else:
            remaining[key] = value
    reported: set[str | None] = set()
    while (refusal := trainer_refusal(trainer_argv(_ANY_OUTPUT_DIR, remaining))) is not None:
        flag, words = _trainer_words(refusal)
        field = TRAINER_FLAGS.get(flag or "")
        if field in reported:
            return  # the same rule again, now on the trainer's default: said already
        reported.add(field)
        key = next((key for key in remaining if TRAINER_FLAGS[key] == field), None)
        if key is None:  # the trainer's default for an unset flag, refused beside the flags given
            match = _TRAINER_REFUSAL.match(refusal)
            default = f"its default {match['value']}" if match else "its default"
            yield ConfigProblem(f"{path}.{flag or '?'}", UNSET, f"is unset, and {default} {words}")
            return
        yield ConfigProblem(f"{path}.{key}", remaining.pop(key), words)


def _architecture_problems(path: str, job: FsdpJobConfig) -> Iterator[ConfigProblem]:
    """A job's model shape: one that can exist, and none that contradicts the table's for the same model."""
    given = job.architecture
    if given is None:
        return
    if given.experts_per_token > given.experts:
        yield ConfigProblem(
            f"{path}.expertsPerToken", given.experts_per_token, f"is more than experts (allowed: 1 to {given.experts})"
        )
    if given.heads % given.kv_heads:
        yield ConfigProblem(
            f"{path}.kvHeads", given.kv_heads, f"does not divide heads, {given.heads} (allowed: a divisor of heads)"
        )
    train = parsed_trainer_config(job.args)
    known = known_architecture(train.model_id) if train else None
    if train and known and given.facts() != known:
        yield ConfigProblem(
            path,
            UNSET,
            f"differs from the shape of {train.model_id} in trainyard's model table (allowed: unset, the table's "
            "shape applies; `trainyard catalog` lists it)",
        )


def _axis_problems(path: str, sizes: dict[str, int]) -> Iterator[ConfigProblem]:
    """Each configured axis by its own key; how the sizes multiply is the trainer's rule (facts.maxtext)."""
    for axis, size in sizes.items():
        if axis not in maxtext.MAXTEXT_AXES:
            yield ConfigProblem(
                f"{path}.{axis}", size, f"is not a MaxText mesh axis (allowed: {', '.join(maxtext.MAXTEXT_AXES)})"
            )
        elif size < 1:
            yield ConfigProblem(
                f"{path}.{axis}",
                size,
                "is not a mesh size (allowed: 1 or more; the fill axis takes the rest when unset)",
            )


def _flavor_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    """Kueue flavors select nodes by GKE's labels; two groups of one shape and capacity are indistinguishable."""
    system_machine = config.cluster.system_pool.machine_type
    try:
        node_shapes.machine_shape(system_machine)
    except topology.TopologyError as error:
        yield ConfigProblem(
            "trainyard:cluster.systemPool.machineType",
            system_machine,
            f"{reason(error, system_machine)}: Kueue's cpu and memory quota needs it",
        )
    seen: dict[tuple[str, str, str], int] = {}
    for index, group in enumerate(config.tpu_slices):
        key = (group.generation, group.topology, group.capacity)
        if key in seen:
            yield ConfigProblem(
                f"trainyard:tpuSlices[{index}].topology",
                group.topology,
                f"has the generation and capacity of trainyard:tpuSlices[{seen[key]}] too, so no Kueue flavor can tell "
                "their nodes apart (allowed: one group per shape and capacity; raise its count)",
            )
        seen.setdefault(key, index)


def driver_needs(config: StackConfig, pool: GpuPoolConfig) -> list[tuple[str, str]]:
    """(what, the oldest driver it runs on) for the GPU software a pool's nodes carry: the gIB plugin on every
    GPU node (the build for its CPU), and the FSDP image the stack builds when a job on the pool runs it."""
    gib = gpu_software.GIB_BY_ARCH[pool.machine.cpu_arch]
    needs = [(f"the gIB plugin {gib.version} on every node", gib.min_driver)]
    runs_built_image = config.images.fsdp is None and (
        any(job.pool == pool.name for job in config.jobs.enabled_fsdp) or config.nccl_smoke_on_trainer_image
    )
    if runs_built_image:
        wheel = gpu_software.FSDP_TORCH
        needs.append((f"the FSDP image's torch {wheel.torch} (CUDA {wheel.cuda})", wheel.min_driver))
    return needs


def _newest(needs: list[tuple[str, str]]) -> str:
    return max((minimum for _, minimum in needs), key=gpu_software.version_key)


def _driver_problems(config: StackConfig) -> Iterator[ConfigProblem]:
    for index, pool in enumerate(config.gpu_pools):
        if pool.driver_version is None:
            continue
        needs = driver_needs(config, pool)
        short = [(what, minimum) for what, minimum in needs if not gpu_software.at_least(pool.driver_version, minimum)]
        if short:
            yield ConfigProblem(
                f"trainyard:gpuPools[{index}].driverVersion",
                pool.driver_version,
                "is too old for "
                + ", and for ".join(f"{what}, which needs {low} or newer" for what, low in short)
                + f" (allowed: {_newest(needs)} or newer)",
            )


def driver_summary(config: StackConfig, pool: GpuPoolConfig) -> str:
    """One line per GPU pool for preflight's report: what its nodes carry and the driver that needs."""
    needs = driver_needs(config, pool)
    carried = "; ".join(f"{what}: {minimum}+" for what, minimum in needs)
    stated = (
        f"driverVersion {pool.driver_version}"
        if pool.driver_version
        else "driverVersion unset, so each FSDP pod checks its node's driver before torchrun"
    )
    source = (
        "the driver you install (gpuDriverVersion INSTALLATION_DISABLED) must be"
        if pool.gpu_driver_version == "INSTALLATION_DISABLED"
        else f"gpuDriverVersion {pool.gpu_driver_version} must give"
    )
    return f"{pool.name}: {source} {_newest(needs)} or newer ({carried}); {stated}"
