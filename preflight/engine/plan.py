"""Run the program under mocks and turn what it registers into a plan."""

from __future__ import annotations

import contextvars
import gc
import runpy
import sys
import warnings
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pulumi

from preflight.engine.mocks import SECRET_PLACEHOLDER, CloudMocks, RecordingMonitor, Registration
from preflight.engine.sdk import root_stack_outputs, run_pulumi_func, sync_await
from preflight.engine.stack_files import read_stack_files


@dataclass
class Plan:
    project: str
    stack: str
    config: dict[str, Any]
    resources: list[Registration]
    outputs: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "stack": self.stack,
            "config": self.config,
            "resources": [resource_json(resource) for resource in self.resources],
            "outputs": self.outputs,
            "manifests": self.manifests,
        }

    @property
    def manifests(self) -> list[dict[str, Any]]:
        """Every Kubernetes object as it would be applied (pulumi-kubernetes sends the object as its inputs),
        with integral numbers as integers, as the provider writes them (the wire carries every number as a float)."""
        return [
            integral_as_int(resource.inputs) for resource in self.resources if is_object(resource.type, resource.inputs)
        ]

    def of_type(self, type_: str) -> list[Registration]:
        return [resource for resource in self.resources if resource.type == type_]


def _stack_outputs() -> dict[str, Any]:
    """The program's exports, resolved (set_mocks finishes the root stack before they are registered)."""
    exports = root_stack_outputs()

    async def resolve() -> dict[str, Any]:
        values = {}
        for key, output in exports.items():
            output = pulumi.Output.from_input(output)
            values[key] = SECRET_PLACEHOLDER if await output.is_secret() else await output.future()
        return values

    return sync_await(resolve())


def _run_program(
    main: Path, project: str, stack: str, config: dict[str, str], secret_keys: list[str], preview: bool
) -> tuple[RecordingMonitor, dict[str, Any]]:
    monitor = RecordingMonitor(CloudMocks())
    pulumi.runtime.set_all_config(config, secret_keys)
    pulumi.runtime.set_mocks(CloudMocks(), project=project, stack=stack, preview=preview, monitor=monitor)
    program_dir = str(main.parent)
    sys.path.insert(0, program_dir)
    try:
        with warnings.catch_warnings():
            # pulumi_gcp's modules warn about deprecated resources on import; they are not ours.
            warnings.simplefilter("ignore", DeprecationWarning)
            sync_await(run_pulumi_func(lambda: runpy.run_path(str(main), run_name="__main__")))
        outputs = _stack_outputs()
    finally:
        sys.path.remove(program_dir)
    return monitor, outputs


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The SDK allocates thousands of short-lived objects per resource; full collections over the heap that
    pulumi_gcp's modules fill made planning superlinear in the resource count (benchmarks/preflight.py)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def plan_config(
    project: str,
    stack: str,
    main: Path,
    config: dict[str, str],
    secret_keys: list[str] | None = None,
    preview: bool = True,
) -> Plan:
    """Plan the program at `main` with the given raw config (key -> engine text); program errors propagate.
    A plan is a preview (`pulumi.runtime.is_dry_run()`); `preview=False` runs the program as `pulumi up` would."""
    secret_keys = secret_keys or []
    # A fresh context per plan: Pulumi keeps its settings, config and root stack in context variables.
    with _collector_paused():
        run = (main, project, stack, config, secret_keys, preview)
        monitor, outputs = contextvars.Context().run(_run_program, *run)
    shown_config = {key: SECRET_PLACEHOLDER if key in secret_keys else value for key, value in config.items()}
    # Registration order depends on asyncio scheduling; URN order keeps plans and their diffs stable.
    resources = sorted(monitor.registrations, key=lambda resource: resource.urn)
    return Plan(project=project, stack=stack, config=shown_config, resources=resources, outputs=outputs)


def plan_stack(stack: str, project_dir: Path) -> Plan:
    """Plan a stack of the project in `project_dir` with the settings of its Pulumi.<stack>.yaml."""
    files = read_stack_files(project_dir, stack)
    return plan_config(files.project, stack, files.main, files.config, files.secret_keys)


def is_object(type_: str, inputs: Any) -> bool:
    """A Kubernetes object of the plan (`Plan.manifests`): pulumi-kubernetes sends its inputs as the object."""
    return type_.startswith("kubernetes:") and isinstance(inputs, dict) and "apiVersion" in inputs


def accepted_resources(resources: list[dict[str, Any]], refused: Collection[int]) -> list[dict[str, Any]]:
    """The plan JSON's resources less the objects at the positions of `Plan.manifests` the API server refuses: the
    checks that play controllers on the plan (placement, admission) see only objects that would exist."""
    objects = [index for index, r in enumerate(resources) if is_object(r["type"], r["inputs"])]
    dropped = {objects[position] for position in refused}
    return [resource for index, resource in enumerate(resources) if index not in dropped]


def integral_as_int(value: Any) -> Any:
    """2.0 -> 2 at any depth; other values unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: integral_as_int(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral_as_int(item) for item in value]
    return value


def resource_json(resource: Registration) -> dict[str, Any]:
    """One resource of the plan JSON; `aliases` and `options` (retainOnDelete, deleteBeforeReplace, import,
    ignoreChanges, replaceOnChanges) only where the resource has some."""
    entry = asdict(resource)
    if not entry["aliases"]:
        del entry["aliases"]
    options = {
        "retainOnDelete": entry.pop("retain_on_delete"),
        "deleteBeforeReplace": entry.pop("delete_before_replace"),
        "import": entry.pop("import_id"),
        "ignoreChanges": entry.pop("ignore_changes"),
        "replaceOnChanges": entry.pop("replace_on_changes"),
    }
    if any(options.values()):
        entry["options"] = {key: value for key, value in options.items() if value}
    return entry
