"""The `catalog` verb: what trainyard knows, read from components/facts/ (the one place each fact is written).

TPU topologies (chips, VMs, machine types), GPU machines, machine shapes, capacity modes, the zones that offer
each accelerator, the price book and the model architectures a forecast knows, as tables within 100 columns or as
JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cli.output import say
from cli.parsing import Verbs, add_verb, json_option
from components.facts import cost, node_shapes, topology, zones
from components.facts.capacity import GPU_CAPACITIES, PRICE_COLUMNS, TPU_CAPACITIES, Capacity
from components.facts.gpu_machines import GPU_MACHINES
from components.facts.models import ARCHITECTURES

GB = 1e9


SUMMARY = "the topologies, machine types, capacity modes, zones, prices and models trainyard knows"
EPILOG = """\
examples:
  trainyard catalog                           every topology, machine, capacity mode and price
  trainyard catalog --region us-east5         prices in one region only
  trainyard catalog --json - | jq '.tpuTopologies[] | select(.vms > 1)'
                                              the multi-host slices, as JSON
  make catalog
"""


def add(verbs: Verbs) -> None:
    catalog_verb = add_verb(verbs, "catalog", SUMMARY, EPILOG, run, [])
    json_option(catalog_verb, "the catalog")
    catalog_verb.add_argument("--region", help="list the prices of REGION only (such as us-east5)")


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Left-aligned columns two spaces apart (numbers as given)."""
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]


def tpu_topologies() -> list[dict[str, Any]]:
    return [
        {
            "generation": generation.name,
            "topology": name,
            "chips": tpu_slice.chips,
            "machineType": machine_type,
            "chipsPerVm": tpu_slice.chips_per_vm,
            "vms": tpu_slice.vms,
            "podType": tpu_slice.pod_type,
            "default": machine_type == machine_types[0],
        }
        for generation in topology.TPU_GENERATIONS.values()
        for name, machine_types in generation.machine_types_by_topology.items()
        for machine_type in machine_types
        for tpu_slice in [topology.tpu_slice(generation.name, name, machine_type)]
    ]


def tpu_generations() -> list[dict[str, Any]]:
    return [
        {
            "generation": generation.name,
            "gkeAccelerator": generation.gke_accelerator,
            "hbmBytesPerChip": generation.hbm_bytes_per_chip,
            "peakBf16FlopsPerChip": generation.peak_bf16_flops_per_chip,
            "devicesPerChip": generation.devices_per_chip,
            "sliceNameCounts": str(generation.slice_naming),
            "nicsPerVm": generation.nics_per_vm,
            "multiHostPlacement": str(generation.multi_host_placement),
            "minGkeVersion": generation.min_gke_version,
            "capacities": [str(mode) for mode in generation.capacities],
        }
        for generation in topology.TPU_GENERATIONS.values()
    ]


def gpu_machines() -> list[dict[str, Any]]:
    return [
        {
            "machineType": machine.machine_type,
            "accelerator": machine.accelerator,
            "gpusPerVm": machine.gpus_per_vm,
            "hbmBytesPerGpu": machine.hbm_bytes,
            "rdmaNics": machine.rdma_nics,
            "localSsds": machine.local_ssds,
            "localSsdGib": machine.local_ssd_gib,
            "peakBf16FlopsPerGpu": machine.peak_bf16_flops_per_gpu,
            "cpuArch": machine.cpu_arch,
            "rdma": machine.rdma,
            "minGkeVersion": machine.min_gke_version,
            "capacities": [str(mode) for mode in machine.capacities],
            "nvlinkDomainTopology": machine.nvlink_domain_topology,
        }
        for machine in GPU_MACHINES.values()
    ]


def machine_shapes() -> list[dict[str, Any]]:
    """Accelerator machines' vCPUs and memory, and the general-purpose machines the price book names."""
    names = dict.fromkeys([*(m for g in topology.TPU_GENERATIONS.values() for m in g.chips_per_machine_type)])
    names.update(dict.fromkeys([*GPU_MACHINES, *cost.load_prices().machines]))
    return [_shape(name) for name in names]


def _shape(machine_type: str) -> dict[str, Any]:
    try:
        shape = node_shapes.machine_shape(machine_type)
    except topology.TopologyError:  # priced, but no shape on file (preflight places no pod on it)
        return {"machineType": machine_type, "vcpus": None, "memoryGib": None}
    return {"machineType": machine_type, "vcpus": shape.vcpus, "memoryGib": shape.memory_gib}


def capacity_modes() -> list[dict[str, Any]]:
    return [
        {
            "capacity": str(mode),
            "tpu": mode in TPU_CAPACITIES,
            "gpu": mode in GPU_CAPACITIES,
            "billedAs": mode.price_column,
            "dwsFlexStart": mode.flex_start,
            "queued": mode.queued,
            "nodeLabel": mode.node_label,
        }
        for mode in Capacity
    ]


def zone_tables() -> list[dict[str, Any]]:
    return [
        {"accelerator": t.accelerator, "zones": sorted(t.zones), "readOn": t.read_on, "source": t.source}
        for t in zones.tables()
    ]


def prices(region: str | None = None) -> list[dict[str, Any]]:
    """Every price book entry: $ per VM-hour (machines) or per chip-hour (TPU chips), by region and mode."""
    book = cost.load_prices()
    entries = []
    for unit, section in (("VM-hour", book.machines), ("chip-hour", book.tpu_chips)):
        for name, regions in section.items():
            for place, modes in regions.items():
                if region is None or place == region:
                    entries += [
                        {
                            "name": name,
                            "unit": unit,
                            "region": place,
                            "mode": mode,
                            "usdPerHour": price.usd_per_hour,
                            "estimate": price.estimate,
                            "date": price.date,
                        }
                        for mode, price in modes.items()
                    ]
    return entries


def models() -> list[dict[str, Any]]:
    """The architectures an FSDP job's model-id is forecast by (components/facts/models.py)."""
    return [
        {
            "model": name,
            "params": arch.params,
            "activeParams": arch.active_params,
            "layers": arch.layers,
            "hidden": arch.hidden,
            "intermediate": arch.intermediate,
            "heads": arch.heads,
            "kvHeads": arch.kv_heads,
            "headDim": arch.head_dim,
            "vocab": arch.vocab,
            "experts": arch.experts,
            "expertsPerToken": arch.experts_per_token,
            "tiedEmbeddings": arch.tied_embeddings,
        }
        for name, arch in ARCHITECTURES.items()
    ]


def catalog(region: str | None = None) -> dict[str, Any]:
    return {
        "tpuGenerations": tpu_generations(),
        "tpuTopologies": tpu_topologies(),
        "gpuMachines": gpu_machines(),
        "machineShapes": machine_shapes(),
        "capacityModes": capacity_modes(),
        "zones": zone_tables(),
        "prices": prices(region),
        "clusterFeeUsdPerHour": cost.load_prices().cluster_fee.usd_per_hour,
        "models": models(),
    }


def _mode_words(mode: dict[str, Any]) -> str:
    words = ["DWS flex-start" if mode["dwsFlexStart"] else ""]
    words.append("queued (a ProvisioningRequest)" if mode["queued"] else "")
    words.append("a specific reservation" if mode["capacity"] == Capacity.RESERVATION else "")
    words.append(f"nodes labelled {mode['nodeLabel']}" if mode["nodeLabel"] else "")
    return "; ".join(word for word in words if word) or "-"


def _usd(amount: float) -> str:
    return f"{amount:,.2f}" if amount >= 1 else f"{amount:.4f}"


def _price_rows(entries: list[dict[str, Any]]) -> Iterator[list[str]]:
    rows: dict[tuple[str, str, str], dict[str, str]] = {}
    for entry in entries:
        mark = "~" if entry["estimate"] else ""
        row = rows.setdefault((entry["name"], entry["unit"], entry["region"]), {})
        row[entry["mode"]] = f"{mark}{_usd(entry['usdPerHour'])}"
    for (name, unit, region), by_mode in rows.items():
        yield [name, unit, region, *(by_mode.get(mode, "-") for mode in PRICE_COLUMNS)]


def render(data: dict[str, Any]) -> str:
    lines = ["TPU topologies (trainyard:tpuSlices[].generation, .topology, .machineType; * the default machine):"]
    lines += table(
        ["gen", "topology", "chips", "machine type", "chips/VM", "VMs (hosts)", "Ray pod type"],
        [
            [
                t["generation"],
                t["topology"],
                t["chips"],
                t["machineType"] + ("*" if t["default"] else ""),
                t["chipsPerVm"],
                t["vms"],
                t["podType"],
            ]
            for t in data["tpuTopologies"]
        ],
    )
    lines += ["", "TPU generations:"]
    lines += table(
        ["gen", "GKE accelerator", "HBM/chip", "bf16 peak/chip", "JAX devices/chip", "NICs/VM"],
        [
            [
                g["generation"],
                g["gkeAccelerator"],
                f"{g['hbmBytesPerChip'] / GB:.0f} GB",
                f"{g['peakBf16FlopsPerChip'] / 1e12:,.0f} TFLOP/s",
                g["devicesPerChip"],
                g["nicsPerVm"],
            ]
            for g in data["tpuGenerations"]
        ],
    )
    lines += ["", "TPU generations on GKE (how multi-host pools are placed, the oldest GKE, capacity modes):"]
    lines += table(
        ["gen", "multi-host", "GKE from", "capacity"],
        [
            [g["generation"], g["multiHostPlacement"], g["minGkeVersion"], ", ".join(g["capacities"])]
            for g in data["tpuGenerations"]
        ],
    )
    lines += ["", "GPU machines (trainyard:gpuPools[].machineType):"]
    lines += table(
        ["machine type", "GPUs", "HBM/GPU", "bf16 peak/GPU", "CPU", "NVLink domain", "local SSDs"],
        [
            [
                g["machineType"],
                f"{g['gpusPerVm']} x {g['accelerator']}",
                f"{g['hbmBytesPerGpu'] / GB:.0f} GB",
                f"{g['peakBf16FlopsPerGpu'] / 1e12:,.0f} TFLOP/s",
                g["cpuArch"],
                g["nvlinkDomainTopology"] or "VM",
                f"{g['localSsds']} x {g['localSsdGib']:,} GiB",
            ]
            for g in data["gpuMachines"]
        ],
    )
    lines += table(
        ["machine type", "RDMA NICs", "GKE at least", "capacity"],
        [
            [g["machineType"], f"{g['rdmaNics']} ({g['rdma']})", g["minGkeVersion"] or "-", ", ".join(g["capacities"])]
            for g in data["gpuMachines"]
        ],
    )
    lines += ["", "Machine shapes (what a node holds before GKE's reservations):"]
    lines += table(
        ["machine type", "vCPUs", "memory"],
        [
            [s["machineType"], s["vcpus"] or "?", f"{s['memoryGib']:,} GiB" if s["memoryGib"] else "?"]
            for s in data["machineShapes"]
        ],
    )
    lines += ["", "Capacity modes (trainyard:tpuSlices[].capacity, trainyard:gpuPools[].capacity):"]
    lines += table(
        ["capacity", "TPU", "GPU", "billed as", "what it means"],
        [
            [m["capacity"], "yes" if m["tpu"] else "no", "yes" if m["gpu"] else "no", m["billedAs"], _mode_words(m)]
            for m in data["capacityModes"]
        ],
    )
    lines += ["", "Zones known to offer each accelerator (another zone is an advisory, not an error):"]
    lines += [f"  {z['accelerator']} (read {z['readOn']}): {', '.join(z['zones'])}" for z in data["zones"]]
    lines += ["", "Prices in USD per hour (components/facts/prices.yaml; ~ an estimate, - not priced):"]
    lines += table(["machine or chip", "per", "region", *PRICE_COLUMNS], list(_price_rows(data["prices"])))
    lines += [f"GKE cluster fee: {data['clusterFeeUsdPerHour']:.2f} per cluster-hour"]
    lines += ["", "Models (trainyard:jobs.fsdp[].args.model-id; another needs trainyard:jobs.fsdp[].architecture):"]
    lines += table(
        ["model", "params", "active", "layers", "hidden", "FFN", "heads/KV", "head", "experts"], _model_rows(data)
    )
    return "\n".join(lines)


def _model_rows(data: dict[str, Any]) -> list[list[object]]:
    return [
        [
            m["model"],
            f"{m['params'] / 1e9:,.1f}B",
            f"{m['activeParams'] / 1e9:,.1f}B",
            m["layers"],
            m["hidden"],
            m["intermediate"],
            f"{m['heads']}/{m['kvHeads']}",
            m["headDim"],
            f"{m['expertsPerToken']} of {m['experts']}" if m["experts"] > 1 else "-",
        ]
        for m in data["models"]
    ]


def priced_regions() -> list[str]:
    book = cost.load_prices()
    return sorted({region for section in (book.machines, book.tpu_chips) for r in section.values() for region in r})


def run(args: argparse.Namespace) -> int:
    if args.region is not None and args.region not in priced_regions():
        print(
            f"trainyard catalog: --region {args.region}: no prices (priced: {', '.join(priced_regions())})",
            file=sys.stderr,
        )
        return 2
    data = catalog(args.region)
    if args.json is not None:
        text = json.dumps(data, indent=2)
        if str(args.json) == "-":
            print(text)
            return 0
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
    say(render(data))
    if args.json is not None:
        say(f"\nCatalog written to {args.json}")
    return 0
