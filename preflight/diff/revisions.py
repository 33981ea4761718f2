"""Plan two revisions of a stack for `trainyard diff --base REF` (cli/diff.py): what a change does to it.

Plans REF in a temporary ``git worktree`` and the working tree side by side (each with ``python -m preflight
--stack S --json FILE`` run in its own checkout by the current interpreter: the two checkouts import different
code), compares the two plans (``compare.compare``, pure) and prints them as +/~/- lines on a terminal
(``terminal.py``) or Markdown (``markdown.render_markdown``; always for ``--output``).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from preflight.checks import policy_runner


class DiffError(RuntimeError):
    """A git revision or a plan could not be produced."""


def _git(*args: str, cwd: Path) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise DiffError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def _plan_command(stack: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "preflight", "--stack", stack, "--json", str(out)]


def _finished(checkout: Path, out: Path, result: subprocess.CompletedProcess[str]) -> dict[str, Any] | None:
    if not out.exists():
        print(
            f"trainyard diff: {checkout} could not be planned (exit {result.returncode}):\n"
            f"{(result.stderr or '').strip()[-2000:]}",
            file=sys.stderr,
        )
        return None
    return json.loads(out.read_text())


def plan_checkout(checkout: Path, stack: str, out: Path) -> dict[str, Any] | None:
    """Plan ``stack`` in a checkout with this interpreter; None (with the reason on stderr) if it cannot."""
    result = subprocess.run(
        _plan_command(stack, out), cwd=checkout, capture_output=True, text=True, check=False, timeout=600
    )
    return _finished(checkout, out, result)


# The plan alone, in the checkout's own code (all the diff reads; the CLI's checks would double the time). A
# revision whose code lacks this API falls back to the CLI, whose messages also say why a plan failed.
PLAN_ONLY = """
import json, sys
from pathlib import Path
from preflight.engine.plan import plan_stack
Path(sys.argv[2]).write_text(json.dumps(plan_stack(sys.argv[1], Path.cwd()).to_json()))
"""


def _start_plan(checkout: Path, stack: str, out: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", PLAN_ONLY, stack, str(out)]
    return subprocess.Popen(command, cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_plan(checkout: Path, stack: str, out: Path, process: subprocess.Popen[str]) -> dict[str, Any] | None:
    process.communicate(timeout=600)
    if process.returncode == 0 and out.exists():
        return json.loads(out.read_text())
    return plan_checkout(checkout, stack, out)


def runs_this_code(checkout: Path) -> bool:
    """The checkout is the one this process imports preflight (and the stack's program) from."""
    return Path(__file__).resolve().parents[2] == checkout.resolve()


def _program_packages(checkout: Path) -> set[str]:
    """The top-level modules a checkout's program may import from it: all but preflight, whose engine plans."""
    names = {path.name for path in checkout.iterdir() if (path / "__init__.py").exists()}
    names |= {path.stem for path in checkout.glob("*.py") if path.stem != "__main__"}
    return names - {"preflight"}


@contextmanager
def _imports_from(checkout: Path) -> Iterator[None]:
    """While the block runs, the program's modules are imported afresh (from ``checkout``, first on sys.path
    while the engine runs it); this process's own stay cached and come back afterwards."""
    packages = _program_packages(checkout) | _program_packages(Path(__file__).resolve().parents[2])

    def ours(name: str) -> bool:
        return name.split(".", 1)[0] in packages

    saved = {name: module for name, module in sys.modules.items() if ours(name)}
    for name in saved:
        del sys.modules[name]
    try:
        yield
    finally:
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)


def plan_here(checkout: Path, stack: str) -> dict[str, Any] | None:
    """Plan the checkout in this process, sharing its imports (Pulumi and its providers' SDKs, the engine): only
    the plan, which is all the diff reads. Another checkout's program imports its own modules."""
    from components.config.load import ConfigError
    from components.config.tokens import TokenError
    from preflight.engine.plan import plan_stack
    from preflight.engine.stack_files import StackFileError

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the plan's own warnings are preflight's to print, not the diff's
    try:
        if runs_this_code(checkout):
            return plan_stack(stack, checkout).to_json()
        with _imports_from(checkout):
            return plan_stack(stack, checkout).to_json()
    except (ConfigError, StackFileError, TokenError) as error:  # one line, as `python -m preflight` says it
        print(f"trainyard diff: {checkout} could not be planned: {error}", file=sys.stderr)
        return None
    finally:
        logging.disable(previous)


def _plan_foreign(checkout: Path, stack: str, out: Path) -> dict[str, Any] | None:
    """Another revision in this process; if its program does not run under this engine (an older API, an
    error its own CLI would explain), in its own process with its own code."""
    try:
        planned = plan_here(checkout, stack)
    except Exception:  # noqa: BLE001 -- another revision's code may fail in any way; its own CLI says why
        planned = None
    return planned if planned is not None else plan_checkout(checkout, stack, out)


Doing = Callable[[str], AbstractContextManager[object]]  # says what is being done while the block runs


def plan_revisions(
    root: Path, ref: str, label: str, stack: str, workdir: Path, doing: Doing = nullcontext
) -> list[dict[str, Any] | None]:
    """(base, head): ``ref`` in a temporary git worktree (removed afterwards) and the working tree. When the
    working tree is this code's checkout, both in this process, one after the other, sharing every import but
    the program's own; else side by side, one process each. ``doing`` shows each step (the CLI's spinner)."""
    tree = workdir / "base"
    _git("worktree", "add", "--detach", str(tree), ref, cwd=root)
    base_json, head_json = workdir / "base.json", workdir / "head.json"
    try:
        if runs_this_code(root):
            with doing(f"planning stack {stack} in the working tree"):
                head = plan_here(root, stack)
            with doing(f"planning stack {stack} at {label}"):
                return [_plan_foreign(tree, stack, base_json), head]
        with doing(f"planning stack {stack} at {label} and in the working tree"):
            base_process = _start_plan(tree, stack, base_json)
            head = _wait_plan(root, stack, head_json, _start_plan(root, stack, head_json))
            return [_wait_plan(tree, stack, base_json, base_process), head]
    finally:
        _git("worktree", "remove", "--force", str(tree), cwd=root)


def pack_config_at(root: Path, ref: str, stack: str) -> dict[str, Any]:
    """``policies/config.<stack>.json`` as it was at ``ref`` (no config where it did not exist): the base is
    judged by the rules it was deployed under, not the working tree's."""
    path = f"policies/config.{stack}.json"
    shown = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=root, capture_output=True, text=True, check=False)
    return policy_runner.parse_pack_config(shown.stdout, f"{path} at {ref}") if shown.returncode == 0 else {}


def checkout_root(folder: Path) -> Path:
    return Path(_git("rev-parse", "--show-toplevel", cwd=folder))


def resolve_base(root: Path, base: str | None) -> tuple[str, str]:
    """(ref, its short commit): ``base``, or the merge base with main when None."""
    ref = base or _git("merge-base", "main", "HEAD", cwd=root)
    return ref, _git("rev-parse", "--short", ref, cwd=root)
