"""`trainyard catalog`: every topology, machine, capacity mode, zone and price trainyard knows, read from
components/facts/, within 100 columns or as JSON."""

from __future__ import annotations

import json
import subprocess
import sys

from components.facts import cost, topology
from components.facts.capacity import Capacity
from tests.helpers.plans import PROJECT_DIR


def catalog(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "preflight", "catalog", *args]
    return subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, check=False, timeout=120)


def test_the_text_lists_every_fact_within_100_columns():
    result = catalog()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "v6e    4x4       16     ct6e-standard-4t*   4         4            v6e-16" in lines
    assert "tpu7x  2x2x2     8      tpu7x-standard-4t*  4         2            tpu7x-16" in lines
    assert "tpu7x  workload-policy  1.34.0-gke.2201000  onDemand, spot, flexStart, reservation" in lines
    assert any(line.startswith("a4-highgpu-8g   8 x nvidia-b200   180 GB") for line in lines)
    assert "a4x-highgpu-4g  4 x nvidia-gb200  186 GB   2,500 TFLOP/s  arm64  1x72           4 x 3,000 GiB" in lines
    assert "a4x-highgpu-4g  4 (dranet)  1.34.1-gke.1829001  reservation" in lines
    for mode in Capacity:
        assert any(line.startswith(f"{mode} ") for line in lines), mode
    assert "dwsQueued    no   yes  flex-start  DWS flex-start; queued (a ProvisioningRequest)" in lines
    assert "tpu-v6e          chip-hour  us-east5      2.70       ~1.08    ~1.62" in lines


def test_the_json_is_the_facts():
    result = catalog("--json", "-")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    slices = sum(
        len(machines) for g in topology.TPU_GENERATIONS.values() for machines in g.machine_types_by_topology.values()
    )
    assert len(data["tpuTopologies"]) == slices
    big = next(t for t in data["tpuTopologies"] if t["topology"] == "16x16")
    assert (big["chips"], big["vms"], big["machineType"]) == (256, 64, "ct6e-standard-4t")
    book = cost.load_prices()
    entries = sum(len(modes) for s in (book.machines, book.tpu_chips) for r in s.values() for modes in r.values())
    assert len(data["prices"]) == entries
    assert {mode["capacity"] for mode in data["capacityModes"]} == {str(mode) for mode in Capacity}


def test_a_region_narrows_the_prices_and_an_unpriced_one_is_refused():
    result = catalog("--region", "europe-west4", "--json", "-")
    assert result.returncode == 0, result.stderr
    assert {entry["region"] for entry in json.loads(result.stdout)["prices"]} == {"europe-west4"}
    refused = catalog("--region", "mars-1")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("trainyard catalog: --region mars-1: no prices (priced: europe-west4, ")


def test_the_models_a_forecast_knows_are_listed_with_their_shapes():
    from components.facts.models import ARCHITECTURES

    text = catalog()
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    header = ["model", "params", "active", "layers", "hidden", "FFN", "heads/KV", "head", "experts"]
    assert lines[-len(ARCHITECTURES) - 1].split() == header
    mixtral = next(line for line in lines if line.startswith("mistralai/Mixtral-8x7B-v0.1 "))
    assert mixtral.split()[1:] == ["46.7B", "12.9B", "32", "4096", "14336", "32/8", "128", "2", "of", "8"]
    data = json.loads(catalog("--json", "-").stdout)["models"]
    assert [entry["model"] for entry in data] == list(ARCHITECTURES)
    (gemma,) = [entry for entry in data if entry["model"] == "google/gemma-2-9b"]
    assert (gemma["headDim"], gemma["tiedEmbeddings"], gemma["experts"]) == (256, True, 1)
