"""`trainyard VERB`: the console script (pyproject.toml [project.scripts]). Day 2's `job` verb lives here (cli/job.py,
over runs/); every other verb is preflight's (preflight/cli.py), until the rest moves here too (docs/development.md).
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

JOB_VERB = "job"
EXIT_USAGE = 2


def verbs() -> tuple[str, ...]:
    from preflight.cli import VERBS

    return (*VERBS, JOB_VERB)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        print(version())
        return 0
    if argv[:1] == [JOB_VERB]:
        from cli import job

        return job.main(argv[1:])
    if argv and not argv[0].startswith("-") and argv[0] not in verbs():
        print(unknown_verb(argv[0]), file=sys.stderr)
        return EXIT_USAGE
    from preflight.cli import main as preflight_main

    return preflight_main(argv)


def unknown_verb(word: str) -> str:
    close = difflib.get_close_matches(word, verbs(), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"trainyard: {word!r} is not a verb ({hint}verbs: {', '.join(verbs())}; `trainyard --help` says more)"


def version() -> str:
    """The checkout's commit and the pinned releases a plan depends on."""
    here = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "describe", "--always", "--dirty"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except OSError:
        commit = ""
    pins = ", ".join(f"{name} {metadata.version(name)}" for name in ("pulumi", "pulumi-gcp", "pulumi-kubernetes"))
    return f"trainyard {commit or 'unknown commit'} ({pins})"


if __name__ == "__main__":
    sys.exit(main())
