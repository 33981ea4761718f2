"""Write Kueue's release manifests for a tag, as its release builds them, and pin their sha256.

    python -m components.facts.releases.gen_kueue --source DIR [--tag v0.19.2]

DIR is a checkout of kubernetes-sigs/kueue at the tag. Kueue's `make artifacts` builds the release's
manifests.yaml with `kustomize build config/default` after `kustomize edit set image controller=IMAGE_TAG`;
this does the same with `kubectl kustomize` (kustomize is built into kubectl) and the promoted image
registry.k8s.io/kueue/kueue:<tag>, writes components/facts/releases/kueue-<tag>.yaml and records the tag, the
commit and the file's sha256 in sources.json, which components/facts/kueue_release.py checks on every load.
A workstation tool: nothing in the cluster or the program runs it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

from components.facts.releases import RELEASES, record

IMAGE = "registry.k8s.io/kueue/kueue"
STAGING_IMAGE_PREFIX = "us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:"


def build(source: Path) -> str:
    built = subprocess.run(
        ["kubectl", "kustomize", str(source / "config" / "default")], capture_output=True, text=True, check=True
    )
    return built.stdout


def with_release_image(text: str, tag: str) -> str:
    """The controller's image as the release sets it (`kustomize edit set image controller=...`)."""
    documents = [document for document in yaml.safe_load_all(text) if document]
    for document in documents:
        if document["kind"] != "Deployment":
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            if container["image"].startswith(STAGING_IMAGE_PREFIX):
                container["image"] = f"{IMAGE}:{tag}"
    return yaml.safe_dump_all(documents, sort_keys=False, width=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="a kubernetes-sigs/kueue checkout at the tag")
    parser.add_argument("--tag", default="v0.19.2")
    args = parser.parse_args(argv)
    commit = subprocess.run(
        ["git", "-C", str(args.source), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    text = with_release_image(build(args.source), args.tag)
    name = f"kueue-{args.tag}.yaml"
    (RELEASES / name).write_text(text)
    entry = {
        "repo": "kubernetes-sigs/kueue",
        "commit": commit,
        "built_from": "config/default (kustomize), controller image set as `make artifacts` does",
        "file": name,
    }
    print(f"wrote {name}: {len(text):,} bytes, sha256 {record(args.tag, entry, text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
