"""Upstream releases vendored as their manifests, each pinned in sources.json by its sha256.

A key of sources.json names one vendored file: Kueue's by its tag (`v0.19.2`), others by chart and tag
(`nvidia-dra-driver-gpu v25.8.1`). The generators beside this file write them; the program reads them through
`pinned_text`, which refuses a file that no longer matches its pin.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

RELEASES = Path(__file__).resolve().parent
SOURCES = RELEASES / "sources.json"


class ReleaseError(RuntimeError):
    """A vendored release is missing or does not match its pinned sha256."""


def sources() -> dict[str, Any]:
    return json.loads(SOURCES.read_text())


def pinned_text(key: str, regenerate: str) -> str:
    """The vendored file `key` names, checked against its sha256; `regenerate` says how to write it anew."""
    pin = sources().get(key)
    if pin is None:
        raise ReleaseError(f"{key} is not vendored (vendored: {', '.join(sorted(sources()))})")
    text = (RELEASES / pin["file"]).read_text()
    digest = hashlib.sha256(text.encode()).hexdigest()
    if digest != pin["sha256"]:
        raise ReleaseError(
            f"components/facts/releases/{pin['file']} has sha256 {digest}, not the pinned {pin['sha256']}: "
            f"regenerate it with `{regenerate}`"
        )
    return text


def record(key: str, entry: dict[str, Any], text: str) -> str:
    """Pin `text` (already written to entry['file']) under `key`; returns its sha256."""
    pins = sources() if SOURCES.exists() else {}
    pins[key] = {**entry, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    SOURCES.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n")
    return pins[key]["sha256"]
