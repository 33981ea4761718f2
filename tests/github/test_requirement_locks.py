"""The hash-locked requirements CI installs (`make lock`): each lock pins exactly what its requirements file pins,
hashes every package, and agrees with the other locks on every version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
# Each lock, and the requirements file it is compiled from.
LOCKS = {
    "requirements.lock": "requirements.txt",
    "requirements-preflight.lock": "requirements-preflight.txt",
    "requirements-dev.lock": "requirements-dev.txt",
    "policies/requirements.lock": "policies/requirements.txt",
}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)")


def canonical(name: str) -> str:
    """PEP 503's normalized name: pip-compile writes `pyyaml` for `PyYAML`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def file_pins(path: Path) -> dict[str, str]:
    """Every `name==version` of a requirements file and of the files it includes with `-r`."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("-r "):
            pins |= file_pins(path.parent / line.split(maxsplit=1)[1])
        elif match := _PIN.match(line):
            pins[canonical(match[1])] = match[2]
    return pins


def lock_entries(path: Path) -> dict[str, tuple[str, str]]:
    """Each locked package: its version and its block (the `--hash` lines and pip-compile's `# via` notes)."""
    blocks = re.split(r"\n(?=[A-Za-z0-9])", path.read_text())
    return {canonical(match[1]): (match[2], block) for block in blocks if (match := _PIN.match(block)) is not None}


def direct(block: str) -> set[str]:
    """The requirements files a lock entry comes from directly (`# via -r FILE`), not through another package."""
    return set(re.findall(r"-r (\S+)", block))


@pytest.mark.parametrize(("lock", "source"), LOCKS.items())
def test_each_lock_pins_what_its_requirements_file_pins(lock, source):
    """A pin changed in the file (by hand or by Dependabot) without `make lock` fails here, not in CI's install."""
    pins, entries = file_pins(PROJECT_DIR / source), lock_entries(PROJECT_DIR / lock)
    assert {name: entries.get(name, ("missing",))[0] for name in pins} == pins, f"{lock}: run `make lock`"
    from_files = {name for name, (_, block) in entries.items() if direct(block)}
    assert from_files == set(pins), f"{lock}: pins no file names any more; run `make lock`"


@pytest.mark.parametrize("lock", LOCKS)
def test_every_locked_package_has_its_hashes(lock):
    """`pip install --require-hashes` refuses a lock with one package unhashed; fail here first."""
    entries = lock_entries(PROJECT_DIR / lock)
    assert entries
    assert [name for name, (_, block) in entries.items() if "--hash=sha256:" not in block] == []


def test_the_locks_agree_on_every_version():
    """A venv that installs two locks (preflight, then dev) does not swap a package's version between them."""
    versions: dict[str, set[str]] = {}
    for lock in LOCKS:
        for name, (version, _) in lock_entries(PROJECT_DIR / lock).items():
            versions.setdefault(name, set()).add(version)
    assert {name: found for name, found in versions.items() if len(found) > 1} == {}


def test_the_checks_read_a_lock_as_pip_compile_writes_it(tmp_path):
    """The parsers themselves: a pin that differs, a package without hashes, a pin the file dropped."""
    (tmp_path / "base.txt").write_text("PyYAML==6.0.3\n")
    (tmp_path / "requirements.txt").write_text("# a comment\n-r base.txt\nray[default]==2.60.0\n")
    assert file_pins(tmp_path / "requirements.txt") == {"pyyaml": "6.0.3", "ray": "2.60.0"}
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "#\n#    pip-compile ...\n#\n"
        "pyyaml==6.0.2 \\\n    --hash=sha256:00\n    # via -r base.txt\n"
        "ray==2.60.0\n    # via\n    #   -c requirements-dev.lock\n    #   -r requirements.txt\n"
        "six==1.17.0 \\\n    --hash=sha256:11\n    # via ray\n"
    )
    entries = lock_entries(lock)
    assert {name: version for name, (version, _) in entries.items()} == {
        "pyyaml": "6.0.2",
        "ray": "2.60.0",
        "six": "1.17.0",
    }
    assert "--hash" not in entries["ray"][1]
    assert direct(entries["ray"][1]) == {"requirements.txt"} and direct(entries["six"][1]) == set()
