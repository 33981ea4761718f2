"""`trainyard job VERB`: run, watch and stop training jobs on the stack's cluster, without `pulumi up`.

Thin: parse arguments, call runs/ (the cluster in runs/cluster.py only), print. Read verbs take `--from FILE`, a
`kubectl get ... -o yaml` dump, in place of the cluster.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from cli.parsing import HelpFormatter, prog_name
from components.facts import gke
from runs import cluster, listing, submit, why
from runs import objects as o
from runs.jobs import TrainingJob, find, training_jobs

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
NAMESPACE = "trainyard"
READ_KINDS_ARG = "jobs,rayjobs,rayclusters,workloads,clusterqueues,provisioningrequests,pods,events"

EPILOG = f"""\
examples:
  trainyard job submit my-run.yaml --dry-run  render and check a job file; send nothing
  trainyard job submit my-run.yaml --image REGISTRY/fsdp@sha256:...
                                              check it, then apply it (server-side apply,
                                              field manager trainyard)
  trainyard job list                          every training job in the namespace, its state, cost
  trainyard job status llama3-8b              why it is where it is, and what to do (alias: why)
  trainyard job logs llama31-70b-fsdp -f      rank 0's log, followed (--rank N for another)
  trainyard job cancel my-run                 SIGTERM (it saves a checkpoint), then delete
  trainyard job why my-run --from dump.yaml   explain a colleague's dump, written by
      kubectl get -n trainyard -o yaml \\
      {READ_KINDS_ARG} > dump.yaml

A job file holds one job in the schema of a trainyard:jobs.maxtext[] or trainyard:jobs.fsdp[] entry,
plus `kind: maxtext` or `kind: fsdp` (docs/operations.md, "Day 2").
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{prog_name()} job",
        description="Run, watch and stop training jobs on the stack's cluster, without `pulumi up`.",
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    verbs = parser.add_subparsers(title="verbs", metavar="VERB", dest="verb", required=True)
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--namespace", default=NAMESPACE, help=f"the jobs' namespace (default: {NAMESPACE})")
    where.add_argument("--context", help="kubeconfig context (default: the current one)")
    stack = argparse.ArgumentParser(add_help=False)
    stack.add_argument("--stack", default="dev", help="stack name: reads Pulumi.<stack>.yaml (default: dev)")
    stack.add_argument("--project-dir", type=Path, metavar="DIR", help="folder with Pulumi.yaml (default: cwd)")
    dump = argparse.ArgumentParser(add_help=False)
    dump.add_argument(
        "--from", dest="dump", type=Path, metavar="FILE", help="read a kubectl -o yaml dump, not a cluster"
    )

    sub = verbs.add_parser(
        "submit",
        help="check a job file as the stack's jobs are checked, then apply it",
        parents=[where, stack],
        formatter_class=HelpFormatter,
    )
    sub.add_argument("file", type=Path, help="the job file (YAML)")
    sub.add_argument("--dry-run", action="store_true", help="print the objects and verdicts; send nothing")
    sub.add_argument("--image", help="the trainer image by digest (REF@sha256:...) for a real submit")
    sub.add_argument("--pack-config", type=Path, metavar="FILE", help="policy pack config (default: the stack's)")
    sub.set_defaults(run=run_submit)
    for name, aliases, summary, run in (
        ("list", [], "every training job: state, flavor, chips or GPUs, age, cost so far", run_list),
        ("status", ["why"], "why a job is where it is, and what to do next", run_status),
    ):
        verb = verbs.add_parser(
            name, aliases=aliases, help=summary, parents=[where, stack, dump], formatter_class=HelpFormatter
        )
        if name == "status":
            verb.add_argument("name", help="the job: its object name, or the stack's job name")
        verb.set_defaults(run=run)
    logs = verbs.add_parser(
        "logs",
        help="a job's log: a RayJob's Ray job, a Job's rank 0 (--rank N)",
        parents=[where],
        formatter_class=HelpFormatter,
    )
    logs.add_argument("name")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing as it writes")
    logs.add_argument("--rank", type=int, default=0, help="a Job's pod by completion index (default: 0)")
    logs.set_defaults(run=run_logs)
    cancel = verbs.add_parser(
        "cancel",
        help="stop a job cleanly: SIGTERM, the grace period to checkpoint, delete",
        parents=[where],
        formatter_class=HelpFormatter,
    )
    cancel.add_argument("name")
    cancel.add_argument("--grace", type=int, default=300, help="seconds to save a checkpoint (default: 300)")
    cancel.set_defaults(run=run_cancel)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (submit.JobFileError, o.DumpError, cluster.ClusterError) as error:
        print(f"trainyard job: {error}", file=sys.stderr)
        return EXIT_USAGE


def run_submit(args: argparse.Namespace) -> int:
    from preflight.engine.stack_files import find_project_dir

    project_dir = (args.project_dir or find_project_dir(Path.cwd())).resolve()
    job = submit.read_job_file(args.file)
    pack = submit.load_pack_config(args.stack, project_dir, args.pack_config)
    rendered = submit.render(job, args.stack, project_dir, pack)
    if args.image:
        submit.pin_image(rendered.objects, rendered.job.kind, args.image)
    if args.dry_run:
        print(yaml.safe_dump_all(rendered.objects, sort_keys=False), end="")
    for line in rendered.notes:
        print(f"# {line}", file=sys.stderr)
    for line in rendered.problems:
        print(f"refused: {line}", file=sys.stderr)
    if rendered.failed:
        return EXIT_FAILED
    if args.dry_run:
        print(f"# {job.name}: OK, {len(rendered.objects)} objects (dry run: nothing sent)", file=sys.stderr)
        return EXIT_OK
    if not args.image:
        raise submit.JobFileError("--image: a real submit needs the trainer image by digest (REF@sha256:...)")
    api = cluster.connect(args.context)
    for applied in cluster.apply(api, rendered.objects, submit.FIELD_MANAGER):
        print(f"applied {applied}")
    for owned in cluster.adopt(api, rendered.owned, rendered.job_object, submit.FIELD_MANAGER):
        print(f"owned by {o.kind(rendered.job_object)} {o.name(rendered.job_object)}: {owned}")
    return EXIT_OK


def read_jobs(args: argparse.Namespace) -> tuple[list[TrainingJob], list[dict[str, Any]], dict[str, int]]:
    """The namespace's training jobs, its objects, and pending positions (workload -> 0-based position)."""
    if args.dump:
        objects = o.load_dump(args.dump)
        positions = _positions_in(objects)
    else:
        api = cluster.connect(args.context)
        objects = cluster.read_objects(api, args.namespace)
        positions = {}
        for queue in o.of_kind(objects, "ClusterQueue"):
            for item in cluster.pending_workloads(api, o.name(queue)):
                positions[str(item.get("metadata", {}).get("name"))] = int(item.get("positionInClusterQueue", 0))
    return training_jobs(objects), objects, positions


def _positions_in(objects: list[dict[str, Any]]) -> dict[str, int]:
    """Positions from a dumped PendingWorkloadsSummary (Kueue's visibility API), when the dump holds one."""
    found = {}
    for summary in o.of_kind(objects, "PendingWorkloadsSummary"):
        for item in summary.get("items") or []:
            found[str((item.get("metadata") or {}).get("name"))] = int(item.get("positionInClusterQueue", 0))
    return found


def run_list(args: argparse.Namespace) -> int:
    jobs, _, positions = read_jobs(args)
    prices = _stack_prices(args)
    print(listing.table(listing.rows(jobs, _now(), positions, prices)))
    return EXIT_OK


def run_status(args: argparse.Namespace) -> int:
    jobs, _objects, positions = read_jobs(args)
    job = find(jobs, args.name)
    if job is None:
        names = ", ".join(sorted({j.workload_label for j in jobs})) or "none"
        print(f"trainyard job: no job {args.name!r} in namespace {args.namespace} (jobs: {names})", file=sys.stderr)
        return EXIT_USAGE
    print("\n".join(why.explain(job, _now(), positions, holders_of(job, jobs), jobs)))
    return EXIT_OK


def holders_of(job: TrainingJob, jobs: list[TrainingJob]) -> list[str]:
    """Admitted jobs of the same ClusterQueue: who holds the quota a pending job waits for."""
    if job.workload is None:
        return []
    queue = o.spec(job.workload).get("queueName")
    wanted = job.accelerators[0]
    holders = []
    for other in jobs:
        if other is job or other.workload is None or not other.started() or other.finished_as() is not None:
            continue
        if o.spec(other.workload).get("queueName") == queue and other.accelerators[0] == wanted:
            holders.append(f"{other.name} ({other.accelerator_text} on {', '.join(other.accelerator_flavors)})")
    return holders


def live_job(args: argparse.Namespace) -> tuple[Any, TrainingJob]:
    """The cluster's client and the job `args.name` names in it."""
    api = cluster.connect(args.context)
    job = find(training_jobs(cluster.read_objects(api, args.namespace)), args.name)
    if job is None:
        raise cluster.ClusterError(f"no job {args.name!r} in namespace {args.namespace}")
    return api, job


def run_logs(args: argparse.Namespace) -> int:
    _, job = live_job(args)
    pod = _pod_of_rank(job, args.rank)
    if pod is None:
        raise cluster.ClusterError(f"{job.kind} {job.name} has no pod of rank {args.rank} yet (`trainyard job why`)")
    for line in cluster.pod_log_lines(args.namespace, o.name(pod), args.follow):
        print(line, end="")
    return EXIT_OK


def _pod_of_rank(job: TrainingJob, rank: int) -> dict[str, Any] | None:
    """A Job's pod by completion index; a RayJob's head (the driver runs there: its log is the run's)."""
    for pod in job.pods:
        pod_labels = o.labels(pod)
        if job.kind == "Job" and pod_labels.get("batch.kubernetes.io/job-completion-index") == str(rank):
            return dict(pod)
        if job.kind == "RayJob" and pod_labels.get(gke.RAY_NODE_TYPE_LABEL) == "head":
            return dict(pod)
    return None


def run_cancel(args: argparse.Namespace) -> int:
    api, job = live_job(args)
    if not job.submitted:
        raise cluster.ClusterError(
            f"{job.kind} {job.name} is the stack's: set its `enabled: false` and run `pulumi up`, or `pulumi up` "
            "would start it again"
        )
    cluster.delete(api, dict(job.job), args.grace)
    print(
        f"{job.kind} {job.name}: stopping (SIGTERM, {args.grace} s to save a checkpoint), then deleted; its "
        "checkpoints and outputs stay in the bucket"
    )
    return EXIT_OK


def _stack_prices(args: argparse.Namespace) -> dict[str, float]:
    from components.config.load import ConfigError, load_stack_config
    from preflight.engine.stack_files import StackFileError, find_project_dir, read_stack_files

    try:
        project_dir = (args.project_dir or find_project_dir(Path.cwd())).resolve()
        files = read_stack_files(project_dir, args.stack)
        return listing.usd_per_accelerator_hour(load_stack_config(files.config, args.stack))
    except (ConfigError, StackFileError, FileNotFoundError):
        return {}  # no stack here: the cost column says "?"


def _now() -> datetime:
    return datetime.fromtimestamp(time.time(), UTC)
