"""The published MaxText recipes for Trillium (v6e) that preflight's MaxText models can read, and what was compiled.

Each is a run AI-Hypercomputer/tpu-recipes publishes under training/trillium/ (at c8cfe2f): its README's step log
line and the MaxText configuration it names (maxtext's benchmarks/maxtext_trillium_model_configs.py at the recipe's
tag: tpu-recipes-v0.1.4 for the Llama 3.1 runs, tpu-recipes-v0.1.2 for Mistral and Mixtral). Where the fit check
compiled a recipe here (MaxText 0.2.5, benchmarks/maxtext_forecast.py), `compiled` says what libtpu made of it
(benchmarks/README.md: "MaxText HBM estimate", "MaxText forecast"); the two refusals' figures are libtpu's own.

Read by benchmarks/maxtext_forecast.py, benchmarks/maxtext_hbm.py and the tests of the instant MaxText verdict and
forecast (tests/preflight/forecast/test_maxtext_recipes.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.maxtext import slice_flags
from components.facts.topology import TpuSlice, tpu_slice

SOURCE = "https://github.com/AI-Hypercomputer/tpu-recipes/tree/c8cfe2f/training/trillium/"
# The recipes' shared tuning: sequence 8192, splash attention with 2048 blocks, custom remat offloading to host.
RECIPE_ARGS = (
    "max_target_length=8192",
    "attention=flash",
    "use_iota_embed=true",
    "dataset_type=synthetic",
    "enable_checkpointing=false",
    "remat_policy=custom",
    "decoder_layer_input=offload",
    "query_proj=offload",
    "key_proj=offload",
    "value_proj=offload",
    "sa_use_fused_bwd_kernel=true",
    "ici_fsdp_parallelism=-1",
    "enable_tensorboard=false",
    "steps=15",
    *(f"sa_block_{name}=2048" for name in ("q", "kv", "kv_compute", "q_dkv", "kv_dkv", "kv_dkv_compute")),
    "sa_block_q_dq=2048",
    "sa_block_kv_dq=2048",
)
# Mixtral 8x7B's (mixtral_8x7b_dropped): sequence 4096, tokens routed to experts with a capacity, dropped beyond it.
MIXTRAL_ARGS = (
    *(arg for arg in RECIPE_ARGS if not arg.startswith(("max_target_length", "sa_"))),
    "max_target_length=4096",
    "sa_block_q=2048",
    "sa_block_q_dkv=2048",
    "sa_block_q_dq=2048",
    "megablox=false",
    "sparse_matmul=false",
    "capacity_factor=1.25",
)

FITS, REFUSED = "fits", "refused"


@dataclass(frozen=True)
class Recipe:
    name: str
    path: str  # under SOURCE
    topology: str  # one v6e slice
    args: tuple[str, ...]  # what the recipe sets beyond `base`
    published_seconds: float  # the README's step log line
    published_tokens: float  # tokens/s/device
    published_tflops: float  # TFLOP/s/device, by the recipe's MaxText count
    compiled: str = ""  # FITS, REFUSED, or "" where not compiled here
    compiled_gib: float | None = None  # HBM per chip as compiled (fits) or as libtpu named it (refused)
    compiled_seconds: float | None = None  # the compiled forecast's step (benchmarks/maxtext_forecast.py)
    base: tuple[str, ...] = RECIPE_ARGS
    slices: int = 1

    @property
    def source(self) -> str:
        return SOURCE + self.path

    @property
    def slice(self) -> TpuSlice:
        return tpu_slice("v6e", self.topology)

    def fit_argv(self) -> list[str]:
        """The fit check's arguments (tools/maxtext_fit/fit_plan.py): slice flags, --, MaxText arguments."""
        return [*slice_flags(self.slice, self.slices), "--name", self.name, "--", *self.base, *self.args]


def llama_8b(topology: str, batch: int, seconds: float, tokens: float, tflops: float, **compiled) -> Recipe:
    chips = tpu_slice("v6e", topology).chips
    return Recipe(
        f"Llama 3.1 8B, v6e-{chips}",
        f"Llama3.1-8B-MaxText/v6e-{chips}",
        topology,
        ("model_name=llama3.1-8b", f"per_device_batch_size={batch}", "out_proj=offload"),
        seconds,
        tokens,
        tflops,
        **compiled,
    )


def llama_70b(topology: str, batch: int, seconds: float, tokens: float, tflops: float, *extra: str, **compiled):
    chips = tpu_slice("v6e", topology).chips
    return Recipe(
        f"Llama 3.1 70B, v6e-{chips}",
        f"Llama3.1-70B-MaxText/v6e-{chips}",
        topology,
        ("model_name=llama3.1-70b", f"per_device_batch_size={batch}", *extra),
        seconds,
        tokens,
        tflops,
        **compiled,
    )


RECIPES = (
    # libtpu refused batch 3 for 34.3 GB per chip (2026-11-25); batch 2 compiled to 27.8 GiB.
    llama_8b("2x4", 3, 3.443, 7138.890, 413.433, compiled=REFUSED, compiled_gib=34.3e9 / 2**30),
    llama_8b("4x4", 3, 3.393, 7243.378, 419.485, compiled=FITS, compiled_gib=26.9, compiled_seconds=3.15),
    llama_8b("4x8", 3, 3.495, 7031.689, 407.225),
    # libtpu: 34.4 GiB of HLO temporaries against 31.24 usable (issue 40).
    llama_8b("8x8", 5, 5.652, 7247.111, 419.701, compiled=REFUSED, compiled_gib=34.4),
    llama_8b("8x16", 4, 4.602, 7119.648, 412.319),
    llama_8b("16x16", 4, 4.546, 7207.336, 417.397, compiled=FITS, compiled_gib=27.8, compiled_seconds=4.19),
    llama_70b(
        "4x8",
        2,
        17.790,
        920.965,
        443.385,
        "weight_dtype=bfloat16",
        compiled=FITS,
        compiled_gib=28.0,
        compiled_seconds=18.51,
    ),
    llama_70b("8x8", 2, 18.688, 876.736, 422.091, compiled=FITS, compiled_gib=27.3, compiled_seconds=18.51),
    llama_70b("8x16", 4, 34.786, 941.976, 453.500),
    llama_70b("16x16", 5, 42.656, 960.248, 462.297, compiled=FITS, compiled_gib=27.0, compiled_seconds=46.28),
    Recipe(
        "Mistral 7B, v6e-8",
        "Mistral-7B-MaxText/README.md",
        "2x4",
        ("model_name=mistral-7b", "per_device_batch_size=6", "out_proj=offload"),
        6.320,
        7776.813,
        431.981,
    ),
    Recipe(
        "Mixtral 8x7B, v6e-256",
        "Mixtral-8x7B-MaxText/README.md",
        "16x16",
        ("model_name=mixtral-8x7b", "per_device_batch_size=12", "out_proj=offload"),
        13.484,
        3645.203,
        302.311,
        base=MIXTRAL_ARGS,
    ),
)
# The 8B v6e-8 recipe at the batch the compile took (benchmarks/maxtext_forecast.py's anchor); its published step is
# the recipe's tokens/s per chip applied to batch 2.
LLAMA_8B_V6E_8_AT_BATCH_2 = llama_8b(
    "2x4", 2, 3.443 * 2 / 3, 7138.890, 413.433, compiled=FITS, compiled_gib=27.8, compiled_seconds=2.10
)


def recipe(name: str) -> Recipe:
    return next(r for r in RECIPES if r.name == name)
