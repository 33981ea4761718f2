"""Which Kubernetes versions preflight checks against, and where its CRD schemas come from: the vendored pinned
upstream files, a cache folder first, and `preflight.checks.fetch_schemas` reproducing them byte for byte."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from preflight.checks import crd_schemas, fetch_schemas
from preflight.checks.crd_schemas import CRD_DIR_ENV, VENDORED_CRD_DIR, crd_search_path, make_strict
from preflight.checks.kube_schemas import (
    UnsupportedKubernetesVersion,
    check_manifests,
    kubernetes_minor,
    supported_kubernetes_versions,
)
from tests.helpers import kube_objects as fx
from tests.helpers.crds import crd_yaml_from_vendored, mirror_of_vendored

CLUSTER_VERSION = "1.34"


@pytest.mark.parametrize("version", ["1.34", "v1.35.2", "1.36.1-gke.1829001", " 1.37 "])
def test_kubernetes_versions_are_read_as_minors(version: str) -> None:
    assert kubernetes_minor(version) == re.search(r"1\.3\d", version).group(0)


@pytest.mark.parametrize("version", ["1.33", "1.38", "2.0", "latest", ""])
def test_unsupported_kubernetes_versions_are_refused_with_the_allowed_range(version: str) -> None:
    with pytest.raises(UnsupportedKubernetesVersion, match=rf"kubernetes_version '{version}'.*allowed 1\.34 to 1\.37"):
        check_manifests([fx.namespace()], version)


def test_supported_versions_are_those_kubernetes_validate_ships_from_1_34() -> None:
    assert supported_kubernetes_versions() == ["1.34", "1.35", "1.36", "1.37"]


def test_dra_v1_is_unknown_before_it_was_served_so_1_34_is_the_floor() -> None:
    from preflight.checks.kube_schemas import builtin_catalog

    assert ("resource.k8s.io", "v1", "ResourceClaimTemplate") not in builtin_catalog("1.33").definition_by_kind
    assert ("resource.k8s.io", "v1", "ResourceClaimTemplate") in builtin_catalog("1.34").definition_by_kind


# --- where CRD schemas come from -------------------------------------------------------------------------


def test_crd_schemas_are_looked_up_in_the_cache_then_in_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CRD_DIR_ENV, raising=False)
    root = Path(crd_schemas.__file__).resolve().parents[2]
    assert crd_search_path() == (root / ".cache" / "schemas" / "crds", root / "preflight" / "checks" / "crds")
    assert all(root in folder.parents for folder in crd_search_path())


def test_every_vendored_schema_is_the_pinned_upstream_file() -> None:
    _, pins = fetch_schemas.load_sources()
    pinned = {relative: sha for pin in pins for relative, sha in pin.outputs.items()}
    vendored = {str(file.relative_to(VENDORED_CRD_DIR)): file for file in VENDORED_CRD_DIR.glob("*/*/*.json")}
    assert sorted(vendored) == sorted(pinned) == sorted(crd_schemas.pinned_schema_files())
    for relative, file in vendored.items():
        assert hashlib.sha256(file.read_bytes()).hexdigest() == pinned[relative], relative


def _copy_schema(relative: str, dest: Path, edit: Callable[[dict[str, Any]], None] = lambda schema: None) -> None:
    schema = json.loads((VENDORED_CRD_DIR / relative).read_text())
    edit(schema)
    (dest / relative).parent.mkdir(parents=True, exist_ok=True)
    (dest / relative).write_text(json.dumps(schema))


def test_the_first_folder_holding_a_schema_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flavor = "kueue.x-k8s.io/v1beta2/resourceflavor.json"
    _copy_schema(flavor, tmp_path / "cache", lambda s: s["properties"]["spec"]["properties"].pop("nodeLabels"))
    monkeypatch.setenv(CRD_DIR_ENV, f"{tmp_path / 'cache'}:{VENDORED_CRD_DIR}")
    [problem] = check_manifests([fx.resource_flavor()], CLUSTER_VERSION).problems
    assert problem.path == "spec.nodeLabels"
    assert (
        check_manifests([fx.local_queue()], CLUSTER_VERSION).problems == []
    )  # not in the cache: found in the repository


def test_a_pinned_kind_without_its_schema_is_unchecked_not_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CRD_DIR_ENV, str(tmp_path))
    result = check_manifests([fx.ray_cluster(), fx.local_queue(), fx.namespace()], CLUSTER_VERSION)
    assert result.problems == []
    assert [line.split(":")[0] for line in result.unchecked] == [
        "RayCluster trainyard/maxtext",
        "LocalQueue trainyard/trainyard",
    ]
    assert f"no schema for RayCluster ray.io/v1 (looked in: {tmp_path})" in result.unchecked[0]


def test_an_unchecked_custom_resource_still_gets_its_metadata_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CRD_DIR_ENV, str(tmp_path))
    ray = fx.ray_cluster()
    ray["metadata"]["name"] = "Not_A_DNS_Name"
    result = check_manifests([ray], CLUSTER_VERSION)
    assert len(result.unchecked) == 1
    assert [problem.path for problem in result.problems] == ["metadata.name"]


def test_an_unpinned_group_is_an_error_even_without_schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CRD_DIR_ENV, str(tmp_path))
    ray = {**fx.ray_cluster(), "apiVersion": "ray.iox/v1"}
    result = check_manifests([ray], CLUSTER_VERSION)
    [problem] = result.problems
    assert result.unchecked == [] and problem.path == "apiVersion"
    assert "trainyard pins schemas for: " in problem.reason and "ray.io/v1" in problem.reason


# --- the strict transform ----------------------------------------------------------------------------------


def test_make_strict_closes_objects_drops_defaulted_required_and_fixes_go_regex() -> None:
    schema = make_strict(
        {
            "type": "object",
            "required": ["minReplicas", "groupName"],
            "properties": {
                "minReplicas": {"type": "integer", "default": 0},
                "groupName": {"type": "string", "pattern": "^(?i)[a-z]+$"},
                "properties": {"type": "object", "properties": {"x": {"type": "string"}}},  # a field named `properties`
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    )
    assert schema["additionalProperties"] is False and schema["required"] == ["groupName"]
    assert schema["properties"]["groupName"]["pattern"] == "(?i)^[a-z]+$"
    assert schema["properties"]["properties"]["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["properties"]["properties"]
    assert "additionalProperties" not in schema["properties"]["free"]
    assert schema["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_every_crd_schema_is_valid_draft4_only_after_the_go_regex_rewrite() -> None:
    by_relative_path = {
        f.relative_to(d): f for d in reversed(crd_search_path()) if d.is_dir() for f in d.glob("*/*/*.json")
    }
    assert len(by_relative_path) >= 22
    for file in by_relative_path.values():
        schema = json.loads(file.read_text())
        if file.name == "admissioncheck.json":
            with pytest.raises(jsonschema.SchemaError, match=r"'\^\(\?i\)\[a-z\].*' is not a 'regex'"):
                crd_schemas.CrdValidator.check_schema(schema)
        crd_schemas.CrdValidator.check_schema(make_strict(schema))


# --- make schemas: download, convert, verify -------------------------------------------------------------


def test_fetch_reproduces_every_vendored_schema_byte_for_byte(tmp_path: Path) -> None:
    _, pins = fetch_schemas.load_sources()
    assert len(pins) == 13 and sum(len(pin.outputs) for pin in pins) == 23
    mirror = mirror_of_vendored(tmp_path / "mirror", pins)
    dest = tmp_path / "crds"
    assert fetch_schemas.main(["--dest", str(dest), "--base-url", mirror.as_uri()]) == 0
    written = sorted(str(f.relative_to(dest)) for f in dest.rglob("*.json"))
    assert written == sorted(relative for pin in pins for relative in pin.outputs)
    for relative in written:
        assert (dest / relative).read_bytes() == (VENDORED_CRD_DIR / relative).read_bytes(), relative


def test_fetch_uses_the_pinned_raw_github_urls_and_skips_unserved_versions(tmp_path: Path) -> None:
    _, pins = fetch_schemas.load_sources()
    network = next(pin for pin in pins if pin.path.endswith("networking.gke.io_networks.yaml"))
    unserved = {
        "name": "v1alpha1",
        "served": False,
        "storage": False,
        "schema": {"openAPIV3Schema": {"type": "object"}},
    }
    requested: list[str] = []

    def download(url: str) -> str:
        requested.append(url)
        return crd_yaml_from_vendored(network, [unserved])

    schemas = fetch_schemas.fetch_pinned(network, "https://raw.githubusercontent.com", download)
    assert requested == [
        "https://raw.githubusercontent.com/GoogleCloudPlatform/gke-networking-api/34c617f213240483385491398d7904e20d0b6adc"
        + "/config/crds/networking.gke.io_networks.yaml"
    ]
    assert list(schemas) == ["networking.gke.io/v1/network.json"]


def test_a_changed_upstream_file_fails_the_hash_check_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sources = json.loads(fetch_schemas.SOURCES_FILE.read_text())
    kueue = next(source for source in sources["sources"] if source["repo"] == "kubernetes-sigs/kueue")
    kueue["files"] = [
        entry for entry in kueue["files"] if entry["path"].endswith(("_resourceflavors.yaml", "_localqueues.yaml"))
    ]
    sources["sources"] = [kueue]
    (tmp_path / "sources.json").write_text(json.dumps(sources))
    _, pins = fetch_schemas.load_sources(tmp_path / "sources.json")
    mirror = mirror_of_vendored(tmp_path / "mirror", pins)
    flavor = next(pin for pin in pins if pin.path.endswith("_resourceflavors.yaml"))
    tampered = mirror / flavor.repo / flavor.commit / flavor.path
    tampered.write_text(tampered.read_text().replace("nodeLabels", "nodeLabelz"))
    dest = tmp_path / "crds"
    arguments = ["--dest", str(dest), "--base-url", mirror.as_uri(), "--sources", str(tmp_path / "sources.json")]
    assert fetch_schemas.main(arguments) == 1
    assert "kueue.x-k8s.io/v1beta1/resourceflavor.json" in capsys.readouterr().err
    assert not dest.exists()


def test_an_unreachable_source_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fetch_schemas.main(["--dest", str(tmp_path / "crds"), "--base-url", (tmp_path / "nowhere").as_uri()]) == 1
    assert "could not download file://" in capsys.readouterr().err
