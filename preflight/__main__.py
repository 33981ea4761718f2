"""`python -m preflight [VERB] ...`: the trainyard command line (cli/main.py); no verb plans the stack.

This file runs under whatever Python started it, so it checks first, in syntax any Python 3 reads, that it is
the project's venv: a system Python without the pinned packages gets one line saying what to run instead of an
import traceback.
"""

import importlib.util
import sys

NEEDED = ("pulumi", "pulumi_gcp", "pulumi_kubernetes", "pydantic", "yaml", "ruamel.yaml", "jsonschema")
HOW = "run `make preflight`, then use .venv/bin/trainyard"


def _missing(name):
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # a dotted name whose parent package is absent
        return True


def environment_problem():
    """Why this interpreter cannot run preflight, or None."""
    if sys.version_info < (3, 12):  # noqa: UP036 (this check is for the Pythons the project does not support)
        version = ".".join(str(part) for part in sys.version_info[:2])
        return f"trainyard: needs Python 3.12 or newer, this is {version}: {HOW}"
    missing = [name for name in NEEDED if _missing(name)]
    if missing:
        return f"trainyard: this Python has no {missing[0]}: {HOW}"
    return None


if __name__ == "__main__":
    problem = environment_problem()
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(2)

from cli.main import main  # the one import of cli/ below it: this entry point is older than cli/ (pyproject.toml)

if __name__ == "__main__":
    sys.exit(main())
