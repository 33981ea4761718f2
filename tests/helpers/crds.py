"""Upstream-shaped CRD YAML built around the vendored schemas (preflight/checks/crds/), to test `make schemas`
offline."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from preflight.checks.crd_schemas import VENDORED_CRD_DIR
from preflight.checks.fetch_schemas import PinnedFile


def crd_yaml_from_vendored(pin: PinnedFile, extra_versions: Sequence[dict[str, Any]] = ()) -> str:
    """A CRD document around the vendored schemas of one pinned file."""
    versions = []
    for relative in pin.outputs:
        schema = json.loads((VENDORED_CRD_DIR / relative).read_text())
        kind, group_version = schema.pop("title").split(" ")
        del schema["$schema"]
        group, version = group_version.split("/")
        versions.append({"name": version, "served": True, "storage": False, "schema": {"openAPIV3Schema": schema}})
    spec = {
        "group": group,
        "names": {"kind": kind, "plural": kind.lower() + "s"},
        "scope": "Namespaced",
        "versions": versions + list(extra_versions),
    }
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "spec": spec}
    return yaml.dump(crd, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))


def mirror_of_vendored(root: Path, pins: list[PinnedFile]) -> Path:
    for pin in pins:
        target = root / pin.repo / pin.commit / pin.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(crd_yaml_from_vendored(pin))
    return root
