"""`trainyard VERB`: the console script (pyproject.toml [project.scripts]). Day 2's `job` verb lives here (cli/job.py,
over runs/); every other verb is preflight's (preflight/cli.py), until the rest moves here too (docs/development.md).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["job"]:
        from cli import job

        return job.main(argv[1:])
    from preflight.cli import main as preflight_main

    return preflight_main(argv)


if __name__ == "__main__":
    sys.exit(main())
