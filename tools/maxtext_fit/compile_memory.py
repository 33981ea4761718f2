"""Ahead-of-time compile MaxText's real training step for a TPU topology, on this CPU machine.

MaxText's `train_compile` builds the step from shapes alone and hands it to libtpu's compiler for the
target topology (libtpu ships in `maxtext[tpu]`); the compiled program's memory analysis is what each
chip will hold. This module runs the same steps as `train_compile.is_oom` but keeps the analysis
instead of printing it. MaxText and JAX are imported only when a compile is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

# Ray's accelerator type -> the generation prefix of MaxText's topology names ("v6e:4x4").
MAXTEXT_GENERATION: dict[str, str] = {
    "TPU-V4": "v4",
    "TPU-V5P": "v5",
    "TPU-V5LITEPOD": "v5e",
    "TPU-V6E": "v6e",
    "TPU-V7X": "tpu7x",
}


class FitCheckError(ValueError):
    """A job the fit check cannot compile as given: names the flag or argument, value and what's allowed."""


class CompilerOutOfMemory(RuntimeError):
    """libtpu's compiler refused the program: it needs more HBM than a chip has."""


@dataclass(frozen=True)
class HbmNeed:
    """Bytes one chip holds while running the step (XLA's CompiledMemoryStats)."""

    argument_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_bytes: int
    generated_code_bytes: int

    @property
    def total_bytes(self) -> int:
        # MaxText's own estimate (output + temp + argument - alias) plus the program itself.
        return self.argument_bytes + self.output_bytes - self.alias_bytes + self.temp_bytes + self.generated_code_bytes


def compile_topology_name(accelerator_type: str, topology: str) -> str:
    """MaxText's name for one slice of this type and topology, e.g. TPU-V6E + 4x4 -> `v6e-16`."""
    from maxtext.utils.accelerator_to_spec_map import UserFacingNameToSystemCharacteristics

    generation = MAXTEXT_GENERATION.get(accelerator_type.upper())
    if generation is None:
        raise FitCheckError(
            f"--accelerator-type {accelerator_type}: the fit check compiles for TPUs; allowed are "
            f"{', '.join(MAXTEXT_GENERATION)}"
        )
    known = {
        spec.topology_name.split(":", 1)[1]: name
        for name, spec in UserFacingNameToSystemCharacteristics.items()
        if spec.topology_name and spec.topology_name.split(":", 1)[0] == generation
    }
    if topology not in known:
        raise FitCheckError(
            f"--topology {topology} for {accelerator_type}: MaxText 0.2.5 knows {', '.join(known)} for this type"
        )
    return known[topology]


def compile_executable(maxtext_argv: Sequence[str]):
    """The compiled train step and MaxText's config for it (`maxtext_argv` must name compile_topology)."""
    # No TPU is attached, so several processes may compile at once; libtpu's lockfile would refuse the second
    # one ("Internal error when accessing libtpu multi-process lockfile") for as long as the first is alive.
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    import jax
    from flax.core.spmd import logical_axis_rules
    from maxtext.configs import pyconfig
    from maxtext.trainers.pre_train import train, train_compile
    from maxtext.utils import maxtext_utils, sharding

    # The same settings train_compile.main applies before it compiles.
    jax.config.update("jax_default_prng_impl", "unsafe_rbg")
    os.environ["LIBTPU_INIT_ARGS"] = (
        os.environ.get("LIBTPU_INIT_ARGS", "") + " --xla_tpu_spmd_rng_bit_generator_unsafe=true"
    )
    config = pyconfig.initialize([train_compile.__file__, *maxtext_argv])
    if config.enable_diloco:
        raise FitCheckError("enable_diloco=true: the fit check compiles the plain train step; allowed is false")
    train_compile.validate_config(config)
    mesh = train_compile.get_topology_mesh(config)
    shaped_args, shaped_kwargs, state_shardings, _, model = train_compile.get_shaped_inputs(mesh, config)
    params_shardings, state_shardings = sharding.maybe_update_params_sharding_with_opt(config, state_shardings)
    input_shardings = sharding.build_zero1_input_state_mesh_shardings(config, state_shardings, params_shardings)
    data_sharding = sharding.get_input_data_sharding(config, mesh)
    step, in_shardings, out_shardings, static_argnums, donate_argnums = (
        maxtext_utils.get_functional_train_with_signature(
            train.train_step, data_sharding, input_shardings, model, config, params_shardings
        )
    )
    try:
        compiled = train_compile.jit_and_compile(
            step,
            shaped_args,
            shaped_kwargs,
            mesh,
            in_shardings,
            out_shardings,
            static_argnums,
            donate_argnums,
            config,
            logical_axis_rules(config.logical_axis_rules),
        )
    except Exception as error:  # libtpu reports OOM as a generic XlaRuntimeError
        if "resource_exhausted" in str(error).lower():
            raise CompilerOutOfMemory(str(error)) from error
        raise
    return compiled, config


def hbm_need(stats) -> HbmNeed:
    return HbmNeed(
        argument_bytes=stats.argument_size_in_bytes,
        output_bytes=stats.output_size_in_bytes,
        alias_bytes=stats.alias_size_in_bytes,
        temp_bytes=stats.temp_size_in_bytes,
        generated_code_bytes=stats.generated_code_size_in_bytes,
    )
