"""Generate preflight/diff/replacements.json: which input changes make the providers replace a resource.

    python -m preflight.diff.gen_replacements --google-beta MIRROR --pulumi-gcp MIRROR --pulumi-kubernetes MIRROR

gcp:* types: the ForceNew fields (and ``customdiff.ForceNewIf[Change]`` conditions) of the Terraform
google-beta provider that pulumi-gcp bridges, read from its Go source at ``--google-beta-ref``; Terraform names
become Pulumi names through pulumi-gcp's ``bridge-metadata.json`` (token, list or single block) and are
checked against the installed pulumi_gcp SDK's own property names. kubernetes:* types: pulumi-kubernetes's
``forceNew`` table (provider/pkg/provider/diff.go), each entry checked to occur in that file. The table is
stamped with the installed pulumi-gcp and pulumi-kubernetes versions; tests/preflight/diff/test_replacement_table.py
fails when requirements.txt pins another version.

Types: every gcp:*/kubernetes:* type in the plans of the repository's stack files and the test fixtures
(``--type`` adds more).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from preflight.diff.go_schema import Field, GoSource, SchemaReader, Unresolved

TABLE = Path(__file__).with_name("replacements.json")
PROJECT_DIR = Path(__file__).resolve().parents[2]
BRIDGE_METADATA = "provider/cmd/pulumi-resource-gcp/bridge-metadata.json"
K8S_DIFF = "provider/pkg/provider/diff.go"

# pulumi-kubernetes diff.go at the ref named in the table: a new name or namespace is a new object for every
# kind; these kinds add their own (Pod omitted: the stack makes none directly). ConfigMap and Secret data are
# replaced unless the provider sets enableConfigMapMutable / enableSecretMutable (or the object is immutable).
K8S_METADATA = ("metadata.name", "metadata.namespace")
K8S_SELECTOR = (
    "spec.selector",
    "spec.selector.matchExpressions",
    "spec.selector.matchLabels",
)
K8S_KINDS: dict[str, tuple[str, ...]] = {
    "apps/v1:DaemonSet": K8S_SELECTOR,
    "apps/v1:Deployment": K8S_SELECTOR,
    "apps/v1:StatefulSet": (
        "spec.podManagementPolicy",
        "spec.revisionHistoryLimit",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
        *K8S_SELECTOR,
    ),
    "batch/v1:Job": ("spec.completions", "spec.parallelism", "spec.template", *K8S_SELECTOR),
    "core/v1:Service": ("spec.clusterIP",),
    "core/v1:PersistentVolumeClaim": (
        "spec.accessModes",
        "spec.storageClassName",
        "spec.volumeName",
        *K8S_SELECTOR,
    ),
    "core/v1:ResourceQuota": ("spec.scopes",),
    "core/v1:ConfigMap": ("binaryData", "data"),
    "core/v1:Secret": ("type", "stringData", "data"),
    "storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
}
# pulumi-kubernetes components: their children carry the changes, they are never replaced themselves.
K8S_COMPONENTS = ("kubernetes:helm.sh/v4:Chart", "kubernetes:kustomize/v2:Directory", "kubernetes:yaml/v2:ConfigGroup")


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(git_dir), *args], capture_output=True, text=True, check=True).stdout


# ---- Terraform names -> Pulumi names ---------------------------------------------------------------------------


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _plurals(name: str) -> list[str]:
    if name.endswith("s"):
        return [name, name + "es"]
    if name.endswith("y"):
        return [name[:-1] + "ies", name + "s"]
    return [name + "s", name + "es"]


def sdk_names(module: str) -> set[str]:
    """Every camelCase property name the installed pulumi_gcp SDK module declares."""
    spec = importlib.util.find_spec("pulumi_gcp")
    assert spec is not None and spec.submodule_search_locations
    package = Path(spec.submodule_search_locations[0]) / module
    names: set[str] = set()
    for source in package.glob("*.py"):
        text = source.read_text()
        names.update(re.findall(r'pulumi\.getter\(name="(\w+)"\)', text))
        names.update(camel(name) for name in re.findall(r"@pulumi\.getter\s+def (\w+)\(self\)", text))
    return names


# pulumi-gcp's labels.go (fix-label-names in bridge-metadata.json): the Terraform-side label set is renamed.
RENAMED = {"terraform_labels": "pulumiLabels"}


def pulumi_name(tf_name: str, metadata: Mapping[str, Any] | None, known: set[str]) -> str:
    """The bridge's name for a Terraform field: camelCase, pluralised when it is a list (not maxItemsOne)."""
    name = RENAMED.get(tf_name) or camel(tf_name)
    if metadata is not None and not metadata.get("maxItemsOne", False):
        candidates = [name, *_plurals(name)] if name.endswith("s") else [*_plurals(name), name]
        return next((candidate for candidate in candidates if candidate in known), candidates[0])
    return name


def force_new_paths(
    fields: Mapping[str, Field], metadata: Mapping[str, Any], known: set[str], prefix: str = ""
) -> Iterable[dict[str, str]]:
    for tf_name, spec in sorted(fields.items()):
        field_metadata = metadata.get(tf_name)
        path = prefix + pulumi_name(tf_name, field_metadata, known)
        if path.rsplit(".", 1)[-1] not in known:
            raise Unresolved(f"{path}: not a property of the installed pulumi_gcp SDK")
        if spec.force_new:
            yield {"path": path, "scope": "presence" if spec.block else "value"}
        if spec.children and not (spec.force_new and not spec.block):
            children_metadata = ((field_metadata or {}).get("elem") or {}).get("fields") or {}
            yield from force_new_paths(spec.children, children_metadata, known, path + ".")


def _tf_path_to_pulumi(tf_path: str, metadata: Mapping[str, Any], known: set[str]) -> str:
    parts, level = [], metadata
    for segment in tf_path.split("."):
        if segment.isdigit():
            continue
        field_metadata = level.get(segment)
        parts.append(pulumi_name(segment, field_metadata, known))
        level = ((field_metadata or {}).get("elem") or {}).get("fields") or {}
    return ".".join(parts)


def gcp_entry(reader: SchemaReader, tf_name: str, metadata: Mapping[str, Any], known: set[str]) -> dict[str, Any]:
    package, expression = reader.source.registration(tf_name)
    fields, conditions = reader.resource(package, expression)
    fields_metadata = metadata.get("fields") or {}
    return {
        "terraform": tf_name,
        "replaceOn": list(force_new_paths(fields, fields_metadata, known)),
        "replaceIf": [
            {"path": _tf_path_to_pulumi(c.field, fields_metadata, known), "condition": c.condition} for c in conditions
        ],
    }


# ---- kubernetes ------------------------------------------------------------------------------------------------


def kubernetes_entry(type_: str, diff_go: str) -> dict[str, Any]:
    if type_ in K8S_COMPONENTS:
        return {"component": True, "replaceOn": []}
    group_version_kind = type_.split(":", 1)[1]
    paths = K8S_METADATA + K8S_KINDS.get(group_version_kind, ())
    for path in paths:
        if f'".{path}"' not in diff_go and f'".{path.rsplit(".", 1)[-1]}"' not in diff_go:
            raise Unresolved(f"{type_}: .{path} is not in pulumi-kubernetes {K8S_DIFF}")
    return {"replaceOn": [{"path": path, "scope": "value"} for path in paths]}


# ---- the types the stack makes ---------------------------------------------------------------------------------


def planned_types() -> set[str]:
    """The gcp:* and kubernetes:* types in the plans of every stack file and the test fixtures."""
    types: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for stack_file in sorted(PROJECT_DIR.glob("Pulumi.*.yaml")):
            out = Path(tmp) / f"{stack_file.stem}.json"
            stack = stack_file.name.split(".")[1]
            command = [sys.executable, "-m", "preflight", "--stack", stack, "--json", str(out)]
            subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, check=False)
            if out.exists():
                types.update(r["type"] for r in json.loads(out.read_text())["resources"])
    fixtures = (PROJECT_DIR / "tests/helpers/policy_stacks.py").read_text()
    types.update(re.findall(r'"((?:gcp|kubernetes):[\w./-]+:\w+)"', fixtures))
    return {t for t in types if t.startswith(("gcp:", "kubernetes:"))}


# ---- main ------------------------------------------------------------------------------------------------------


def generate(args: argparse.Namespace) -> dict[str, Any]:
    bridge = json.loads(_git(args.pulumi_gcp, "show", f"{args.pulumi_gcp_ref}:{BRIDGE_METADATA}"))
    by_token = {entry["current"]: (tf, entry) for tf, entry in bridge["auto-aliasing"]["resources"].items()}
    diff_go = _git(args.pulumi_kubernetes, "show", f"{args.pulumi_kubernetes_ref}:{K8S_DIFF}")
    source = GoSource(args.google_beta, args.google_beta_ref)
    reader = SchemaReader(source)
    wanted = planned_types() | set(args.type) | set(json.loads(TABLE.read_text())["types"] if TABLE.exists() else {})
    types: dict[str, Any] = {}
    for type_ in sorted(wanted):
        if type_.startswith("kubernetes:"):
            types[type_] = kubernetes_entry(type_, diff_go)
            continue
        tf_name, metadata = by_token[type_]
        known = sdk_names(type_.split(":")[1].split("/")[0])
        try:
            types[type_] = gcp_entry(reader, tf_name, metadata, known)
        except Unresolved as error:
            raise Unresolved(f"{type_} ({tf_name}): {error}") from error
    return {
        "generatedBy": "python -m preflight.diff.gen_replacements",
        "pulumiGcp": importlib.metadata.version("pulumi_gcp"),
        "pulumiKubernetes": importlib.metadata.version("pulumi_kubernetes"),
        "sources": {
            "terraform-provider-google-beta": {"ref": args.google_beta_ref, "commit": source.commit()},
            "pulumi-gcp": {
                "ref": args.pulumi_gcp_ref,
                "commit": _git(args.pulumi_gcp, "rev-parse", f"{args.pulumi_gcp_ref}^{{commit}}").strip(),
                "file": BRIDGE_METADATA,
            },
            "pulumi-kubernetes": {
                "ref": args.pulumi_kubernetes_ref,
                "commit": _git(args.pulumi_kubernetes, "rev-parse", f"{args.pulumi_kubernetes_ref}^{{commit}}").strip(),
                "file": K8S_DIFF,
            },
        },
        "types": types,
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m preflight.diff.gen_replacements", description=__doc__)
    parser.add_argument("--google-beta", type=Path, required=True, help="git dir of terraform-provider-google-beta")
    parser.add_argument("--google-beta-ref", default="v7.45.0")
    parser.add_argument("--pulumi-gcp", type=Path, required=True, help="git dir of pulumi/pulumi-gcp")
    parser.add_argument("--pulumi-gcp-ref", default="v9.35.0")
    parser.add_argument("--pulumi-kubernetes", type=Path, required=True, help="git dir of pulumi/pulumi-kubernetes")
    parser.add_argument("--pulumi-kubernetes-ref", default="v4.32.0")
    parser.add_argument("--type", action="append", default=[], help="also generate this type token")
    parser.add_argument("--output", type=Path, default=TABLE)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        table = generate(args)
    except (Unresolved, KeyError, subprocess.CalledProcessError) as error:
        print(f"gen_replacements: {error}", file=sys.stderr)
        return 2
    args.output.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"{args.output}: {len(table['types'])} types", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
