"""The config reference in docs/configuration.md is generated from the config models; they must agree."""

from __future__ import annotations

import pytest

from components.config import reference
from components.config.models import StackConfig


def test_the_page_table_is_the_generated_one():
    page = reference.PAGE.read_text(encoding="utf-8")
    assert reference.page_with_table(page) == page, "run `make docs` to regenerate docs/configuration.md's table"


def test_a_page_without_the_markers_is_refused():
    with pytest.raises(ValueError, match="no <!-- config-table:start -->"):
        reference.page_with_table("# Configuration\n")


def _leaf_fields(model, seen=None):
    for name, field in model.model_fields.items():
        inner, _ = reference.model_in(field.annotation)
        if inner is not None:
            yield from _leaf_fields(inner)
        else:
            yield model.__name__, name, field


def test_every_config_key_is_described():
    undescribed = [
        f"{model}.{name}"
        for model, name, field in _leaf_fields(StackConfig)
        if not field.description and name != "stack"
    ]
    assert undescribed == []


def test_the_table_lists_nested_and_list_keys_with_types_allowed_values_and_defaults():
    table = {row.key: row for row in reference.rows()}
    assert table["trainyard:tpuSlices[].capacity"].what.endswith("Allowed: onDemand, spot, flexStart, reservation.")
    assert table["trainyard:tpuSlices[].capacity"].type == "enum"
    assert table["trainyard:tpuSlices[].topology"].default == "required"
    assert table["trainyard:cluster.systemPool.maxNodes"] == (
        "trainyard:cluster.systemPool.maxNodes",
        "integer",
        table["trainyard:cluster.systemPool.maxNodes"].what,
        "5",
    )
    assert "stack" not in table


@pytest.mark.parametrize(
    ("key", "type_name"),
    [
        ("trainyard:network.podRange", "CIDR"),
        ("trainyard:network.dcnRanges", "list of CIDR"),
        ("trainyard:network.rdmaRanges", "list of CIDR"),
        ("trainyard:jobs.maxtext[].ici", "map of string to integer"),
        ("trainyard:jobs.maxtext[].minSlices", "integer"),  # Optional[Annotated[int, ...]]
        ("trainyard:jobs.maxtext[].perDeviceBatchSize", "number"),
        ("trainyard:jobs.fsdp[].gated", "list of string"),  # tuple[str, ...] | None
        ("trainyard:images.fsdp", "string"),
        ("trainyard:gpuPools[].compactPlacement", "boolean"),
    ],
)
def test_each_key_has_the_type_a_stack_file_writes(key: str, type_name: str):
    assert {row.key: row.type for row in reference.rows()}[key] == type_name


def test_defaults_are_whole():
    """No default is cut: a long one (eight RDMA ranges, the libtpu flags) is shown in full."""
    table = {row.key: row.default for row in reference.rows()}
    assert table["trainyard:network.rdmaRanges"].split(", ")[-1] == "192.168.8.0/24"
    assert "…" not in "".join(table.values())


def test_a_type_the_reference_cannot_name_is_an_error():
    with pytest.raises(TypeError, match="no name for the config type"):
        reference.type_name(complex)
