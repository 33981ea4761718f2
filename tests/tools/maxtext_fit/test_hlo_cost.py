"""The step's cost read from HLO that libtpu really compiled here for TPU topologies (no TPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from tools.maxtext_fit.compile_memory import compile_executable
from tools.maxtext_fit.hlo_cost import step_cost

TINY = [
    "base_emb_dim=64",
    "base_num_query_heads=4",
    "base_num_kv_heads=4",
    "base_mlp_dim=128",
    "base_num_decoder_layers=4",
    "head_dim=16",
    "vocab_size=256",
    "per_device_batch_size=2",
    "max_target_length=64",
    "enable_tensorboard=false",
    "base_output_directory=/tmp/trainyard-hlo-cost",
    "compile_topology=v6e-4",
]
ONE_SLICE = [*TINY, "compile_topology_num_slices=1"]


def _xla_flops(compiled) -> float:
    analysis = compiled.cost_analysis()
    return (analysis[0] if isinstance(analysis, list) else analysis)["flops"]


@pytest.fixture(scope="module")
def v6e_4_mesh():
    import jax
    from jax.experimental import topologies
    from jax.sharding import Mesh

    topology = topologies.get_topology_desc(
        platform="tpu",
        topology_name="v6e:2x2",
        chip_config_name="default",
        chips_per_host_bounds=(2, 2, 1),
        num_slices=1,
        wrap=(False, False, False),
    )
    assert len(topology.devices) == 4 and jax.devices()[0].platform == "cpu"
    return Mesh(np.array(topology.devices), ("x",))


def test_a_scanned_matmul_counts_once_per_iteration_where_xlas_cost_analysis_counts_it_once(v6e_4_mesh):
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    rows = jax.ShapeDtypeStruct((4096, 2048), jnp.bfloat16, sharding=NamedSharding(v6e_4_mesh, PartitionSpec("x")))
    weight = jax.ShapeDtypeStruct((2048, 2048), jnp.bfloat16, sharding=NamedSharding(v6e_4_mesh, PartitionSpec()))

    def five_layers(x, w):
        return jax.lax.scan(lambda carry, _: (jnp.tanh(carry @ w), None), x, None, length=5)[0]

    compiled = jax.jit(five_layers).lower(rows, weight).compile()
    one_layer = 2 * 1024 * 2048 * 2048  # per chip: a quarter of the rows
    assert step_cost(compiled.as_text()).matmul_flops == 5 * one_layer
    assert _xla_flops(compiled) < 1.1 * one_layer


def test_a_loop_that_counts_in_twos_runs_half_as_often(v6e_4_mesh):
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    rows = jax.ShapeDtypeStruct((4096, 2048), jnp.bfloat16, sharding=NamedSharding(v6e_4_mesh, PartitionSpec("x")))
    weight = jax.ShapeDtypeStruct((2048, 2048), jnp.bfloat16, sharding=NamedSharding(v6e_4_mesh, PartitionSpec()))

    def from_3_to_12_by_2(x, w):  # i = 3, 5, 7, 9, 11: five matmuls, as XLA's windowed einsum loops step by 2
        return jax.lax.while_loop(lambda s: s[0] < 12, lambda s: (s[0] + 2, jnp.tanh(s[1] @ w)), (3, x))[1]

    compiled = jax.jit(from_3_to_12_by_2).lower(rows, weight).compile()
    assert step_cost(compiled.as_text()).matmul_flops == 5 * 2 * 1024 * 2048 * 2048


@pytest.fixture(scope="module")
def tiny_compiles():
    """The same tiny model compiled with its layers scanned (MaxText's default) and unrolled."""
    scanned, config = compile_executable([*ONE_SLICE, "scan_layers=true"])
    unrolled, _ = compile_executable([*ONE_SLICE, "scan_layers=false"])
    return scanned, unrolled, config


def test_scanned_and_unrolled_layers_cost_the_same_and_match_xla_where_it_sees_every_layer(tiny_compiles):
    from maxtext.utils import maxtext_utils

    scanned, unrolled, config = tiny_compiles
    scanned_cost, unrolled_cost = step_cost(scanned.as_text()), step_cost(unrolled.as_text())
    assert scanned_cost.unknown_trip_counts == 0
    assert scanned_cost.matmul_flops == pytest.approx(unrolled_cost.matmul_flops, rel=0.05)
    # XLA's count also has the element-wise work, which ours leaves out; without a loop the matmuls are most.
    assert 0.7 * _xla_flops(unrolled) < unrolled_cost.matmul_flops <= _xla_flops(unrolled)
    assert _xla_flops(scanned) < 0.8 * scanned_cost.matmul_flops
    # MaxText's model FLOPs are forward + backward; full rematerialization runs the forward once more.
    model_flops = maxtext_utils.calculate_tflops_training_per_device(config, log=False)[0] * 1e12
    assert scanned_cost.matmul_flops == pytest.approx(model_flops * 4 / 3, rel=0.05)


def test_fsdp_within_one_slice_gathers_weights_over_ici_and_sends_nothing_over_dcn(tiny_compiles):
    cost = step_cost(tiny_compiles[0].as_text())
    kinds = {c.kind for c in cost.collectives if c.network == "ici"}
    assert {"all-gather", "reduce-scatter"} <= kinds
    assert {c.group_size for c in cost.collectives if c.kind != "collective-permute"} == {4}, cost.collectives
    assert cost.link_bytes("ici") > 0 and cost.link_bytes("dcn") == 0
    assert cost.hbm_bytes > 0


def test_data_parallel_slices_all_reduce_gradients_over_dcn():
    compiled, _ = compile_executable([*TINY, "compile_topology_num_slices=2", "dcn_data_parallelism=2"])
    cost = step_cost(compiled.as_text(), slices=2)
    dcn = [c for c in cost.collectives if c.network == "dcn"]
    assert dcn and {c.kind for c in dcn} == {"all-reduce"} and {c.group_size for c in dcn} == {2}
    # Every chip exchanges at least its shard of the bf16 gradients: ~37k parameters over 4 chips.
    assert cost.link_bytes("dcn") > 2 * 37_000 / 4


def test_flash_attention_runs_in_kernels_the_hlo_has_no_flops_for_and_the_rest_is_still_counted():
    from maxtext.utils import maxtext_utils

    blocks = [f"sa_block_{name}=512" for name in ("q", "kv", "kv_compute", "q_dkv", "kv_dkv", "kv_dkv_compute")]
    shape = ["base_emb_dim=256", "base_num_query_heads=2", "base_num_kv_heads=2", "base_mlp_dim=512"]
    shape += ["head_dim=128", "base_num_decoder_layers=2", "vocab_size=256", "per_device_batch_size=1"]
    own = ["max_target_length=512", "attention=flash", "enable_tensorboard=false", "compile_topology=v6e-4"]
    own += ["compile_topology_num_slices=1", "base_output_directory=/tmp/trainyard-hlo-cost"]
    compiled, config = compile_executable([*shape, *blocks, *own])
    cost = step_cost(compiled.as_text())
    # Each kernel's backend config spans several lines of the module's text; the parse keeps every computation.
    assert cost.attention_kernels >= 2 * 2 and cost.unknown_trip_counts == 0
    total, learnable, _ = maxtext_utils.calculate_tflops_training_per_device(config, log=False)
    # The projections and MLP, forward and backward, with at most one rematerialized forward.
    assert learnable * 1e12 < cost.matmul_flops < learnable * 1e12 * 4 / 3 * 1.05
    assert learnable < total


# How libtpu prints a computation that runs on the SparseCore (MaxText's embedding gather on v6e): its closing
# brace names the execution thread. Abridged from the dev stack's compiled llama3-8b step.
SPARSECORE_MODULE = """HloModule jit_train_step, is_scheduled=true

%fused_gather (param_0.1: bf16[128,64], param_1.1: s32[16]) -> bf16[16,64] {
  %param_0.1 = bf16[128,64]{1,0} parameter(0)
  %param_1.1 = s32[16]{0} parameter(1)
  ROOT %gather.1 = bf16[16,64]{1,0} gather(%param_0.1, %param_1.1), offset_dims={1}, collapsed_slice_dims={0}
}, execution_thread="sparsecore"

%called_gather (param_0.2: bf16[128,64], param_1.2: s32[16]) -> bf16[16,64] {
  %param_0.2 = bf16[128,64]{1,0} parameter(0)
  %param_1.2 = s32[16]{0} parameter(1)
  ROOT %gather_offload.1 = bf16[16,64]{1,0} fusion(%param_0.2, %param_1.2), kind=kCustom, calls=%fused_gather
}, execution_thread="sparsecore"

ENTRY %main (table: bf16[128,64], ids: s32[16], w: bf16[64,32]) -> bf16[16,32] {
  %table = bf16[128,64]{1,0} parameter(0)
  %ids = s32[16]{0} parameter(1)
  %w = bf16[64,32]{1,0} parameter(2)
  %call.1 = bf16[16,64]{1,0} call(%table, %ids), to_apply=%called_gather
  ROOT %dot.1 = bf16[16,32]{1,0} dot(%call.1, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_a_computation_closed_with_its_execution_thread_ends_there():
    cost = step_cost(SPARSECORE_MODULE)
    assert cost.matmul_flops == 2 * 16 * 32 * 64
    with pytest.raises(ValueError, match="calls itself"):
        step_cost(SPARSECORE_MODULE.replace('}, execution_thread="sparsecore"\n\n%called', "\n%called", 1))
