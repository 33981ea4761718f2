"""Write NVIDIA's DRA driver chart rendered for GKE, and pin its sha256.

    python -m components.facts.releases.gen_nvidia_dra --source DIR --helm HELM [--tag v25.8.1]

DIR is a checkout (or git directory) of NVIDIA/k8s-dra-driver-gpu; HELM a helm binary (v3 or v4). The chart at
the tag (deployments/helm/nvidia-dra-driver-gpu) is rendered with `helm template --include-crds` for Kubernetes
1.34 with resource.k8s.io/v1 (the API the stack's A4X floor serves) and components/facts/nvidia_dra.py's
CHART_VALUES, written to components/facts/releases/nvidia-dra-driver-gpu-<tag>.yaml and pinned in sources.json.
A workstation tool: nothing in the cluster or the program runs it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from components.facts import nvidia_dra
from components.facts.releases import RELEASES, record

CHART_PATH = f"deployments/helm/{nvidia_dra.CHART}"
KUBE_VERSION = "1.34.1"
API_VERSIONS = "resource.k8s.io/v1"


def _git(source: Path, *args: str, text: bool = True) -> str | bytes:
    return subprocess.run(["git", "-C", str(source), *args], capture_output=True, text=text, check=True).stdout


def render(source: Path, tag: str, helm: str) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        archive = _git(source, "archive", tag, CHART_PATH, text=False)
        subprocess.run(["tar", "x", "-C", scratch], input=archive, check=True)
        values = Path(scratch) / "values.yaml"
        values.write_text(yaml.safe_dump(nvidia_dra.CHART_VALUES))
        rendered = subprocess.run(
            [helm, "template", nvidia_dra.CHART, str(Path(scratch) / CHART_PATH), "--namespace", nvidia_dra.NAMESPACE,
             "--kube-version", KUBE_VERSION, "--api-versions", API_VERSIONS, "--include-crds", "-f", str(values)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    documents = [document for document in yaml.safe_load_all(rendered.stdout) if document]
    return yaml.safe_dump_all(documents, sort_keys=False, width=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="an NVIDIA/k8s-dra-driver-gpu git directory")
    parser.add_argument("--helm", default="helm", help="the helm binary")
    parser.add_argument("--tag", default=nvidia_dra.VERSION)
    args = parser.parse_args(argv)
    text = render(args.source, args.tag, args.helm)
    name = f"{nvidia_dra.CHART}-{args.tag}.yaml"
    (RELEASES / name).write_text(text)
    entry = {
        "repo": nvidia_dra.REPO,
        "commit": str(_git(args.source, "rev-parse", f"{args.tag}^{{commit}}")).strip(),
        "built_from": f"{CHART_PATH} (helm template --include-crds, Kubernetes {KUBE_VERSION}, "
        "components/facts/nvidia_dra.py CHART_VALUES)",
        "file": name,
    }
    print(f"wrote {name}: {len(text):,} bytes, sha256 {record(f'{nvidia_dra.CHART} {args.tag}', entry, text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
