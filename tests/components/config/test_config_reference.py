"""The README's config table is generated from the config fields' descriptions; they must agree."""

from __future__ import annotations

from components.config import reference
from components.config.models import StackConfig


def test_the_readme_table_is_the_generated_one():
    readme = reference.README.read_text(encoding="utf-8")
    assert reference.readme_with_table(readme) == readme, "run `make docs` to regenerate the README's config table"


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


def test_the_table_lists_nested_and_list_keys_with_allowed_values_and_defaults():
    table = {key: (what, default) for key, what, default in reference.rows()}
    assert table["trainyard:tpuSlices[].capacity"][0].endswith("Allowed: onDemand, spot, flexStart, reservation.")
    assert table["trainyard:tpuSlices[].topology"][1] == "required"
    assert table["trainyard:cluster.systemPool.maxNodes"][1] == "5"
    assert "stack" not in table
