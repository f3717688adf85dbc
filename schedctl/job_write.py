"""`schedctl job run|delete|suspend|resume`: vcctl's job verbs over /api/v1/jobs/."""

from __future__ import annotations

import argparse

from schedctl import render
from schedctl.client import ApiClient
from schedctl.errors import ApiError, CliError, UsageError
from schedctl.quantities import positive, resource_list

JOBS = "/api/v1/jobs/"
FINISHED = ("Completed", "Cancelled")


def _uid(job: dict) -> str:
    return f"{job.get('namespace')}/{job.get('name')}"


def run_body(args: argparse.Namespace) -> dict:
    """vcctl's quick job: `replicas` tasks of one template asking `requests`, gang of `min`."""
    if args.min is not None and args.min > args.replicas:
        raise argparse.ArgumentTypeError(f"--min {args.min} is above --replicas {args.replicas}")
    task = {"name": "main", "replicas": args.replicas, "request": args.requests or {}}
    body = {"namespace": args.namespace, "name": args.name, "min_member": args.min or args.replicas,
            "tasks": [task]}
    if args.queue:
        body["queue"] = args.queue
    return body


def cmd_run(client: ApiClient, args: argparse.Namespace) -> None:
    """`job run -N NAME`: submit a job of identical tasks (POST /api/v1/jobs/)."""
    try:
        body = run_body(args)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(str(exc)) from None
    job = client.post(JOBS, body)
    render.emit(job, args.output, lambda j: f"job {_uid(j)} created (id {j.get('id')}, "
                                            f"{args.replicas} task(s), min member {body['min_member']})")


def _state_change(client: ApiClient, args: argparse.Namespace, verb: str, words: str) -> None:
    from schedctl.jobs import resolve_job

    job = resolve_job(client, args.job)
    done = client.post(f"{JOBS}{job['id']}/{verb}/")
    render.emit(done, args.output, lambda j: f"job {_uid(j)} {words}")


def cmd_suspend(client: ApiClient, args: argparse.Namespace) -> None:
    """`job suspend JOB`: its running tasks are released; it is not scheduled until resumed."""
    _state_change(client, args, "suspend", "suspended (its tasks are released; resume it to schedule it "
                                           "again)")


def cmd_resume(client: ApiClient, args: argparse.Namespace) -> None:
    """`job resume JOB`: its tasks wait again and the next cycle schedules it as a new gang."""
    _state_change(client, args, "resume", "resumed (pending: the next cycle schedules it)")


def cmd_delete(client: ApiClient, args: argparse.Namespace) -> None:
    """`job delete JOB`: cancel it if unfinished, then delete it (DELETE twice: the API cancels
    an unfinished job and deletes a finished one). A job whose tasks are still being released
    is left cancelled, with a message saying to delete it again; exit 1."""
    from schedctl.jobs import resolve_job

    job = resolve_job(client, args.job)
    path = f"{JOBS}{job['id']}/"
    if job.get("phase") not in FINISHED:
        client.delete(path)  # the cancel
    try:
        client.delete(path)
    except ApiError as exc:
        if exc.status != 409:
            raise
        raise CliError(f"job {_uid(job)} cancelled but not deleted: {exc.message}") from None
    render.emit({"id": job["id"], "namespace": job.get("namespace"), "name": job.get("name"),
                 "deleted": True}, args.output, lambda j: f"job {_uid(j)} deleted")


def add_parsers(verbs: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """run, delete, suspend and resume under `job`."""
    p = verbs.add_parser("run", parents=[common], help="run a job of identical tasks",
                         description="Submit a job of REPLICAS identical tasks (vcctl job run).")
    p.add_argument("-N", "--name", required=True, help="job name")
    p.add_argument("-n", "--namespace", default="default", help="namespace (default: default)")
    p.add_argument("--queue", default=None, help="leaf queue (default: the server's default queue)")
    p.add_argument("-r", "--replicas", type=positive, default=1, help="number of tasks (default 1)")
    p.add_argument("-m", "--min", type=positive, default=None,
                   help="minimum tasks to start together (gang; default: all replicas)")
    p.add_argument("-R", "--requests", type=resource_list, default=None, metavar="cpu=1,memory=1Gi",
                   help="each task's request (Kubernetes quantities)")
    p.set_defaults(func=cmd_run)
    for name, func, text in (
            ("delete", cmd_delete, "delete a job (cancelled first if unfinished)"),
            ("suspend", cmd_suspend, "suspend a job: its tasks are released, it is not scheduled"),
            ("resume", cmd_resume, "resume a suspended job: it is scheduled again")):
        p = verbs.add_parser(name, parents=[common], help=text, description=text[0].upper() + text[1:] + ".")
        p.add_argument("job", metavar="JOB", help="job id or namespace/name")
        p.set_defaults(func=func)
