"""The pack as the Pulumi CLI runs it: `python -m pulumi.policy <engine> policies/` serves the analyzer over gRPC.

The CLI is not installed here, so the test plays the engine: it starts the pack the way the CLI's Python
policy host does, reads the port it prints, and calls GetAnalyzerInfo and Analyze over gRPC.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from policies import rules
from tests.helpers.plans import PROJECT_DIR

POLICIES_DIR = PROJECT_DIR / "policies"


@contextmanager
def served_pack(python: str) -> Iterator[str]:
    """Start the pack as the CLI's Python policy host does and yield the port it serves on."""
    # cwd is the pack directory, as under the CLI; the pack must find the project root by itself.
    process = subprocess.Popen(
        [python, "-m", "pulumi.policy", "127.0.0.1:1", str(POLICIES_DIR)],
        cwd=POLICIES_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = process.stdout.readline().strip()
        assert port.isdigit(), process.stderr.read() if process.poll() is not None else port
        yield port
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def analyzer():
    with served_pack(sys.executable) as port:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()


def test_pack_serves_every_policy_with_its_level(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == "trainyard"
    levels = {policy.name: policy.enforcementLevel for policy in info.policies}
    assert list(levels) == [policy.name for policy in rules.POLICIES]
    assert levels["accelerator-vpc-mtu"] == proto.MANDATORY
    assert levels["cost-within-budget"] == proto.MANDATORY
    assert levels["runs-within-budget"] == proto.ADVISORY


def test_pack_reports_a_bad_network_over_grpc(analyzer):
    properties = struct_pb2.Struct()
    properties.update({"mtu": 1460.0, "autoCreateSubnetworks": False})
    response = analyzer.Analyze(
        proto.AnalyzeRequest(
            type="gcp:compute/network:Network",
            properties=properties,
            urn="urn:pulumi:dev::trainyard::gcp:compute/network:Network::dcn",
            name="dcn",
        ),
        timeout=30,
    )
    assert [(d.policyName, d.enforcementLevel) for d in response.diagnostics] == [
        ("accelerator-vpc-mtu", proto.MANDATORY)
    ]
    assert "1460" in response.diagnostics[0].message


def test_pack_metadata_and_requirements_are_pinned():
    meta = yaml.safe_load((POLICIES_DIR / "PulumiPolicy.yaml").read_text())
    assert meta["runtime"]["name"] == "python" and meta["version"] == rules.PACK_VERSION
    pins = [line for line in (POLICIES_DIR / "requirements.txt").read_text().splitlines() if line and line[0] != "#"]
    assert "pulumi-policy==1.21.0" in pins and all("==" in pin for pin in pins)


@pytest.fixture(scope="module")
def pack_venv_python(tmp_path_factory) -> Path:
    """A venv with only policies/requirements.txt installed, as the Pulumi CLI builds the pack's venv."""
    venv = tmp_path_factory.mktemp("policy-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "-r", str(POLICIES_DIR / "requirements.txt")],
        check=True,
        timeout=600,
        capture_output=True,
    )
    return python


def test_pack_starts_in_its_own_venv_without_the_programs_dependencies(pack_venv_python):
    missing = subprocess.run(
        [
            str(pack_venv_python),
            "-c",
            "import importlib.util as u; print([m for m in ('pydantic', 'pulumi_gcp') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert missing.stdout.strip() == "[]"
    with served_pack(str(pack_venv_python)) as port:
        assert int(port) > 0


def test_every_policy_docs_security_names_is_in_the_pack():
    from pathlib import Path

    from policies.rules import POLICIES

    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    rows = [line.split("|") for line in text.splitlines() if line.startswith("| ") and line.count("|") == 4]
    named = {name for row in rows[1:] for name in re.findall(r"`([a-z]+(?:-[a-z]+)+)`", row[3])}
    assert named and named <= {policy.name for policy in POLICIES}
