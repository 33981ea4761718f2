"""Our copies of MaxText facts (defaults, mesh axes, the pin) agree with the MaxText installed here."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import maxtext
import yaml

from components.facts.gen_maxtext_settings import as_text, settings
from workloads.maxtext.launch import MAXTEXT_REQUIREMENT
from workloads.maxtext.parallelism import DEFAULT_MESH_AXES, default_parallelism

BASE_YML = Path(maxtext.__file__).parent / "configs" / "base.yml"


def _base_config() -> dict:
    return yaml.safe_load(BASE_YML.read_text())


def test_parallelism_defaults_are_maxtexts():
    base = _base_config()
    maxtext_defaults = {key: value for key, value in base.items() if re.fullmatch(r"(ici|dcn)_\w+_parallelism", key)}
    assert default_parallelism() == maxtext_defaults


def test_mesh_axes_are_maxtexts():
    assert list(DEFAULT_MESH_AXES) == _base_config()["mesh_axes"]


def test_workers_pin_the_maxtext_this_venv_runs(repo_root):
    requirements = (repo_root / "workloads/maxtext/requirements.txt").read_text().splitlines()
    assert MAXTEXT_REQUIREMENT in requirements
    assert MAXTEXT_REQUIREMENT.endswith("==" + version("maxtext"))


def test_the_settings_preflight_reads_are_the_installed_maxtexts(repo_root):
    """components/facts/maxtext_settings.json (read by the config checks; no MaxText in the Pulumi venv) is what
    components/facts/gen_maxtext_settings.py reads from the MaxText installed here, at the version the trainer pins."""
    committed = (repo_root / "components" / "facts" / "maxtext_settings.json").read_text()
    assert committed == as_text(settings()), (
        "regenerate: .venv-maxtext/bin/python -m components.facts.gen_maxtext_settings "
        "> components/facts/maxtext_settings.json"
    )
    assert MAXTEXT_REQUIREMENT.endswith(f"=={version('maxtext')}")
