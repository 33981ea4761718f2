"""The ici_*/dcn_* check: seeds' jobs pass, mismatches are refused by name, and MaxText agrees."""

from __future__ import annotations

import functools

import pytest
from maxtext.configs import pyconfig
from maxtext.trainers.pre_train import train
from maxtext.utils import max_utils

from workloads.maxtext.parallelism import (
    ParallelismError,
    check_elastic_parallelism,
    check_parallelism,
    parse_overrides,
)

SEED_8B = ["model_name=llama3-8b", "per_device_batch_size=4", "ici_fsdp_parallelism=4", "ici_tensor_parallelism=4"]
SEED_70B = [
    "model_name=llama3-70b",
    "ici_tensor_parallelism=4",
    "ici_fsdp_parallelism=4",
    "dcn_fsdp_parallelism=2",
    "dcn_data_parallelism=1",
    "remat_policy=full",
]


def test_seed_8b_on_two_v6e_16_slices_fills_dcn_data_with_the_slices():
    shape = check_parallelism(parse_overrides(SEED_8B), devices_per_slice=16, slices=2)
    assert shape.ici == {"fsdp": 4, "tensor": 4}
    assert shape.dcn == {"data": 2}


def test_seed_70b_shards_fsdp_across_the_two_slices():
    shape = check_parallelism(parse_overrides(SEED_70B), devices_per_slice=16, slices=2)
    assert shape.ici == {"fsdp": 4, "tensor": 4}
    assert shape.dcn == {"fsdp": 2}


def test_default_fsdp_fill_in_takes_every_chip_of_the_slice():
    assert check_parallelism({}, devices_per_slice=16, slices=1).ici == {"fsdp": 16}


def test_leading_config_file_is_not_an_override():
    assert parse_overrides(["base.yml", "steps=5"]) == {"steps": "5"}


@pytest.mark.parametrize(
    ("args", "slices", "named"),
    [
        (
            ["ici_fsdp_parallelism=4", "ici_tensor_parallelism=2"],
            1,
            "ici_fsdp_parallelism=4 x ici_tensor_parallelism=2",
        ),
        (["ici_tensor_parallelism=3"], 1, "ici_fsdp_parallelism=-1 cannot be filled in"),
        (["ici_data_parallelism=-1"], 1, "ici_data_parallelism=-1 and ici_fsdp_parallelism=-1"),
        (["dcn_fsdp_parallelism=2", "dcn_data_parallelism=1"], 1, "dcn_fsdp_parallelism=2"),
        (["dcn_data_parallelism=4"], 2, "dcn_data_parallelism=4"),
        (["ici_fsdp_parallelism=0"], 1, "ici_fsdp_parallelism=0"),
        (["ici_fsdp_parallelism=four"], 1, "ici_fsdp_parallelism=four"),
        (["ici_sequence_parallelism=2", "ici_fsdp_parallelism=8"], 1, "ici_sequence_parallelism=2"),
        (["ici_tenzor_parallelism=4"], 1, "ici_tenzor_parallelism=4"),
    ],
)
def test_refusal_names_the_argument_and_its_value_and_what_is_allowed(args, slices, named):
    with pytest.raises(ParallelismError) as refusal:
        check_parallelism(parse_overrides(args), devices_per_slice=16, slices=slices)
    message = str(refusal.value)
    assert named in message
    assert "allowed" in message


def test_malformed_argument_is_refused():
    with pytest.raises(ParallelismError, match="'steps' is not key=value"):
        parse_overrides(["steps"])


def test_elastic_job_must_fit_every_slice_count_it_may_run_on():
    with pytest.raises(ParallelismError, match="elastic over 1..2 slices and fails at 1"):
        check_elastic_parallelism(parse_overrides(SEED_70B), devices_per_slice=16, slice_counts=range(1, 3))
    shapes = check_elastic_parallelism(parse_overrides(SEED_8B), devices_per_slice=16, slice_counts=range(1, 3))
    assert {count: shape.dcn for count, shape in shapes.items()} == {1: {}, 2: {"data": 2}}


@functools.cache
def _maxtext_ici_mesh(args: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """(mesh axes, ICI size per axis) as MaxText's own config machinery derives them from these arguments."""
    config = pyconfig.initialize(
        [train.__file__, *args, "hardware=cpu", "skip_jax_distributed_system=true", "enable_checkpointing=false"]
    )
    return tuple(config.mesh_axes), tuple(config.ici_parallelism)


def _maxtext_resolution(args: tuple[str, ...], chips: int) -> dict[str, int] | None:
    mesh_axes, sizes = _maxtext_ici_mesh(args)
    try:
        filled = max_utils.fill_unspecified_mesh_axes(list(sizes), chips, "ICI")
    except AssertionError:
        return None
    return {axis: size for axis, size in zip(mesh_axes, filled) if size != 1}


@pytest.mark.parametrize("chips", [1, 4, 8, 16, 32])
@pytest.mark.parametrize(
    "args",
    [
        (),
        ("ici_tensor_parallelism=4",),
        ("ici_tensor_parallelism=8",),
        ("ici_tensor_parallelism=3",),
        ("ici_fsdp_parallelism=4", "ici_tensor_parallelism=4"),
        ("ici_fsdp_parallelism=2", "ici_data_parallelism=-1", "ici_expert_parallelism=2"),
        ("ici_data_parallelism=-1",),
        ("ici_fsdp_parallelism=8", "ici_context_parallelism=2", "ici_pipeline_parallelism=2"),
    ],
)
def test_ici_verdict_matches_maxtexts_own_config_and_fill_in(args, chips):
    """What MaxText's config and mesh code accept we accept with the same sizes; what they refuse we refuse."""
    expected = _maxtext_resolution(args, chips)
    try:
        ours = check_parallelism(parse_overrides(args), devices_per_slice=chips, slices=1).ici
    except ParallelismError:
        ours = None
    assert ours == expected
