"""The RayJob entrypoint: MaxText pre-training on TPU slices (or CPU workers) through Ray Train's JaxTrainer.

    python -m workloads.maxtext.train --accelerator-type TPU-V6E --topology 4x4 --slices 2 \\
        --hosts-per-slice 4 --chips-per-host 4 [--min-slices 1 --max-slices 2] --max-failures 3 \\
        --storage-path /data/runs --name llama3-8b \\
        -- model_name=llama3-8b steps=100 per_device_batch_size=4 ici_fsdp_parallelism=4 ici_tensor_parallelism=4

Before any worker starts, it refuses `ici_*`/`dcn_*` parallelism that does not match the slices
(exit code 2, naming the argument, its value and what is allowed). Run from the repository root.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from workloads.maxtext.cli import add_slice_flags, slice_facts_from, split_maxtext_args
from workloads.maxtext.launch import MAXTEXT_REQUIREMENT, RunOptions, build_trainer
from workloads.maxtext.parallelism import ParallelismError
from workloads.maxtext.slices import SliceFactsError

EXIT_REFUSED = 2


def parse_flags(flags: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.maxtext.train",
        description="Run MaxText's pre-training through Ray Train's JaxTrainer. MaxText's key=value "
        "arguments follow a '--'.",
    )
    add_slice_flags(parser)
    run = parser.add_argument_group("run")
    run.add_argument("--storage-path", required=True, help="Ray Train storage and MaxText's default output dir")
    run.add_argument("--name", default="maxtext", help="Ray Train run name and MaxText's default run_name")
    run.add_argument("--max-failures", type=int, default=0, help="worker-group restarts Ray Train may do")
    run.add_argument(
        "--worker-package",
        action="append",
        help=f"requirement installed into the workers' runtime env (repeatable; default {MAXTEXT_REQUIREMENT}); "
        "'none' installs nothing (the image already carries MaxText)",
    )
    run.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE", help="worker env var")
    run.add_argument("--fail-once-at-step", type=int, help="testing: the last worker dies once after MaxText's step N")
    return parser.parse_args(flags)


def run_options(namespace: argparse.Namespace) -> RunOptions:
    packages = namespace.worker_package or [MAXTEXT_REQUIREMENT]
    return RunOptions(
        name=namespace.name,
        storage_path=namespace.storage_path,
        max_failures=namespace.max_failures,
        worker_packages=tuple(requirement for requirement in packages if requirement.lower() != "none"),
        worker_env=_parse_env(namespace.worker_env),
        fail_once_at_step=namespace.fail_once_at_step,
    )


def _parse_env(pairs: Sequence[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise SliceFactsError(f"--worker-env {pair!r}: allowed is KEY=VALUE")
        env[key] = value
    return env


def main(argv: Sequence[str] | None = None) -> int:
    flags, maxtext_args = split_maxtext_args(sys.argv[1:] if argv is None else argv)
    namespace = parse_flags(flags)
    try:
        facts = slice_facts_from(namespace)
        trainer = build_trainer(facts, maxtext_args, run_options(namespace))
    except (SliceFactsError, ParallelismError) as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        return EXIT_REFUSED
    result = trainer.fit()
    print(f"trainyard: MaxText run {namespace.name!r} finished; Ray Train result in {result.path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
