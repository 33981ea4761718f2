"""The local rehearsal's Ray runs with token authentication, as every RayCluster on the cluster does: a real local
Ray cluster (one CPU), probed over its job API (the dashboard, 8265 on the cluster) and its GCS, with no token, a
wrong token and the run's own token."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]

WRONG_TOKEN = "0" * 64

# Runs in a fresh interpreter: Ray reads its authentication settings once per process.
PROBE = textwrap.dedent(
    f"""
    import json, os, subprocess, sys, urllib.error, urllib.request
    from workloads.maxtext.local import start_local_ray

    context = start_local_ray(1)
    jobs_api = "http://" + context.dashboard_url + "/api/jobs/"

    def status(headers):
        try:
            with urllib.request.urlopen(urllib.request.Request(jobs_api, headers=headers), timeout=30) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    bearer = "Bearer " + os.environ["RAY_AUTH_TOKEN"]
    found = {{
        "mode": os.environ["RAY_AUTH_MODE"],
        "no token": status({{}}),
        "wrong token": status({{"Authorization": "Bearer {WRONG_TOKEN}"}}),
        "the run's token": status({{"Authorization": bearer}}),
    }}
    client = "import ray; ray.init(address=%r); print('connected')" % context.address_info["gcs_address"]
    wrong = {{**os.environ, "RAY_AUTH_TOKEN": "{WRONG_TOKEN}"}}
    run = subprocess.run([sys.executable, "-c", client], env=wrong, capture_output=True, text=True, timeout=120)
    found["gcs client with a wrong token"] = [run.returncode, "connected" in run.stdout, run.stderr[-3000:]]

    # `trainyard job logs` reads a RayJob's logs through this job API (runs/cluster.py ray_job_logs)
    import time
    from runs.cluster import ClusterError, ray_job_logs

    body = json.dumps({{"entrypoint": "echo trainyard-logs-probe"}}).encode()
    headers = {{"Authorization": bearer, "Content-Type": "application/json"}}
    with urllib.request.urlopen(urllib.request.Request(jobs_api, body, headers, method="POST"), timeout=60) as answer:
        submission = json.loads(answer.read())["submission_id"]
    for _ in range(120):
        with urllib.request.urlopen(urllib.request.Request(jobs_api + submission, headers=headers), timeout=30) as r:
            if json.loads(r.read())["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
                break
        time.sleep(1)
    dashboard = "http://" + context.dashboard_url
    found["logs"] = ray_job_logs(dashboard, submission, os.environ["RAY_AUTH_TOKEN"])
    try:
        ray_job_logs(dashboard, submission, "{WRONG_TOKEN}")
        found["logs with a wrong token"] = "read"
    except ClusterError as error:
        found["logs with a wrong token"] = str(error)
    print("FOUND " + json.dumps(found))
    """
)


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict:
    # No RAY_AUTH_* from the caller's environment, and a home of its own: nothing read from or left in ~/.ray.
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path_factory.mktemp("home")), "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", PROBE],
        check=False,
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("FOUND ")]
    assert lines, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("FOUND "))


def test_the_local_cluster_requires_a_token(probed):
    assert probed["mode"] == "token"


def test_the_job_api_refuses_a_client_without_the_token(probed):
    assert probed["no token"] == 401
    assert probed["wrong token"] == 403


def test_the_job_api_serves_the_runs_own_token(probed):
    assert probed["the run's token"] == 200


def test_a_gcs_client_with_a_wrong_token_is_refused(probed):
    returncode, connected, stderr = probed["gcs client with a wrong token"]
    assert returncode != 0 and not connected
    assert "token" in stderr.lower()


def test_trainyard_job_logs_reads_a_ray_jobs_log_with_the_token_and_is_refused_without(probed):
    assert "trainyard-logs-probe" in probed["logs"]
    assert probed["logs with a wrong token"].endswith("the head answered 403 Forbidden")
