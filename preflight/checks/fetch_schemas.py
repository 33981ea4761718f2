"""`make schemas`: download the pinned upstream CRDs and write their JSON schemas into the cache.

    python -m preflight.checks.fetch_schemas [--dest .cache/schemas/crds] [--base-url URL] [--sources FILE]

Each pinned CRD YAML (preflight/checks/schema_sources.json) is fetched at its commit; every served version's
`openAPIV3Schema` becomes `<dest>/<group>/<version>/<kind lower>.json`, serialised exactly like
the vendored `preflight/checks/crds/` (`$schema` and `title` first, other keys sorted, indent 1, final newline),
so the pinned sha256 of each output can be checked. Nothing is written unless every file checks out.
`--base-url` points at a mirror (`file:///path` works) laid out as `<repo>/<commit>/<path>`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from preflight.checks.crd_schemas import CACHE_CRD_DIR, SOURCES_FILE, PinnedFile, load_sources

JSON_SCHEMA_DRAFT = "http://json-schema.org/draft-04/schema#"
DOWNLOAD_TIMEOUT_SECONDS = 60
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FetchError(RuntimeError):
    """A download, conversion or hash check failed; the message names the file and what to do."""


def schema_json(kind: str, group: str, version: str, open_api_schema: Mapping[str, Any]) -> bytes:
    """One served version's schema, serialised byte for byte like preflight/checks/crds/."""
    sorted_schema = json.loads(json.dumps(open_api_schema, sort_keys=True))
    document = {"$schema": JSON_SCHEMA_DRAFT, "title": f"{kind} {group}/{version}", **sorted_schema}
    return (json.dumps(document, indent=1) + "\n").encode("utf-8")


def schemas_from_crd_yaml(text: str) -> dict[str, bytes]:
    """`<group>/<version>/<kind lower>.json` -> bytes, for every served version of every CRD in `text`."""
    schemas: dict[str, bytes] = {}
    for document in yaml.load_all(text, Loader=_YAML_LOADER):
        if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
            continue
        spec = document["spec"]
        group, kind = spec["group"], spec["names"]["kind"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            open_api_schema = version["schema"]["openAPIV3Schema"]
            schemas[f"{group}/{version['name']}/{kind.lower()}.json"] = schema_json(
                kind, group, version["name"], open_api_schema
            )
    return schemas


def download_text(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        raise FetchError(f"could not download {url}: {error} (offline? pass --base-url to use a mirror)") from error


def fetch_pinned(pin: PinnedFile, base_url: str, download: Callable[[str], str] = download_text) -> dict[str, bytes]:
    """Download one pinned CRD file and check that it yields exactly the pinned outputs and hashes."""
    url = pin.url(base_url)
    schemas = schemas_from_crd_yaml(download(url))
    if set(schemas) != set(pin.outputs):
        raise FetchError(
            f"{url} yields served versions {sorted(schemas)}, but schema_sources.json pins {sorted(pin.outputs)}"
        )
    for relative_path, content in schemas.items():
        actual = hashlib.sha256(content).hexdigest()
        if actual != pin.outputs[relative_path]:
            raise FetchError(
                f"{relative_path} from {url} has sha256 {actual}, expected {pin.outputs[relative_path]}: "
                "the upstream file or the conversion changed; update schema_sources.json only after reviewing it"
            )
    return schemas


def write_schemas(schemas: Mapping[str, bytes], dest: Path) -> None:
    """Write all files into a sibling temp folder, then move them into `dest` one by one (atomic each)."""
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest))
    try:
        for relative_path, content in sorted(schemas.items()):
            staged = staging / relative_path
            staged.parent.mkdir(parents=True, exist_ok=True)
            staged.write_bytes(content)
            final = dest / relative_path
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m preflight.checks.fetch_schemas", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--dest", type=Path, default=CACHE_CRD_DIR, help=f"output folder (default {CACHE_CRD_DIR})")
    parser.add_argument("--base-url", help="mirror of raw.githubusercontent.com laid out as <repo>/<commit>/<path>")
    parser.add_argument("--sources", type=Path, default=SOURCES_FILE, help="pinned sources (JSON)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, download: Callable[[str], str] = download_text) -> int:
    args = parse_args(argv)
    default_base_url, pins = load_sources(args.sources)
    base_url = args.base_url or default_base_url
    schemas: dict[str, bytes] = {}
    try:
        for pin in pins:
            schemas.update(fetch_pinned(pin, base_url, download))
    except FetchError as error:
        print(f"fetch_schemas: {error}; nothing written to {args.dest}", file=sys.stderr)
        return 1
    write_schemas(schemas, args.dest)
    print(f"fetch_schemas: wrote {len(schemas)} CRD schemas (sha256 verified) from {len(pins)} files to {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
