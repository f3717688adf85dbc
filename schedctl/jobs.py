"""`schedctl job list|get|submit|cancel` (run/delete/suspend/resume: job_write): jobs (PodGroups with
their tasks) over /api/v1/jobs/."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from schedctl import render
from schedctl.client import ApiClient, path_part
from schedctl.errors import ApiError, CliError, UsageError
from schedctl.inputs import Submission, read_submission
from schedctl.quantities import positive

JOBS = "/api/v1/jobs/"
IMPORT = "/api/v1/manifests/import/"
SCHEMA = "/api/schema/"
JOB_HEADERS = ("NAMESPACE", "NAME", "ID", "QUEUE", "PHASE", "MIN", "TASKS", "RUNNING", "PENDING", "REASON",
               "AGE")
TASK_HEADERS = ("TASK", "ROLE", "STATUS", "NODE", "REQUEST")
TASK_STATUSES = ("Pending", "Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing",
                 "Succeeded", "Failed")
# Result keys of the manifest import named `<kinds>_<verb>`: singular names for the plural kinds.
_SINGULAR = {"queues": "queue", "jobs": "job", "priority_classes": "priorityclass", "podgroups": "podgroup"}


def job_uid(job: dict) -> str:
    """`namespace/name` of a job object."""
    return job.get("uid") or f"{job.get('namespace')}/{job.get('name')}"


def parse_job_ref(ref: str) -> tuple[int | None, str, str]:
    """JOB as (id, "", "") or (None, namespace, name); anything else is a usage error."""
    ref = ref.strip()
    if ref.isdigit():
        return int(ref), "", ""
    namespace, sep, name = ref.partition("/")
    if not sep or not namespace or not name:
        raise UsageError(f"JOB must be a job id or namespace/name, not {ref!r}")
    return None, namespace, name


def resolve_job(client: ApiClient, ref: str) -> dict:
    """The job's detail object for an id or `namespace/name`.

    `namespace/name` uses GET /api/v1/namespaces/{ns}/jobs/{name}/ where the server has it, else
    the list filtered by namespace and searched by name (the search matches substrings: the
    exact name is picked from the answers).
    """
    pk, namespace, name = parse_job_ref(ref)
    if pk is not None:
        return client.get(f"{JOBS}{pk}/")
    try:
        return client.get(f"/api/v1/namespaces/{path_part(namespace)}/jobs/{path_part(name)}/")
    except ApiError as exc:
        if exc.status != 404:
            raise
    for job in client.iter_list(JOBS, {"namespace": namespace, "search": name}):
        if job.get("namespace") == namespace and job.get("name") == name:
            return client.get(f"{JOBS}{job['id']}/")
    raise ApiError(404, "not_found", f"No job {namespace}/{name}.")


def task_counts(job: dict) -> tuple[Any, Any, Any]:
    """(tasks, running, pending): the list's counts, or counted from a detail's tasks."""
    if job.get("task_count") is not None or "tasks" not in job:
        return job.get("task_count"), job.get("running_count"), job.get("pending_count")
    statuses = [t.get("status") for t in job.get("tasks") or []]
    return len(statuses), statuses.count("Running"), statuses.count("Pending")


def job_row(job: dict) -> list[Any]:
    """One table row of JOB_HEADERS."""
    total, running, pending = task_counts(job)
    reason = job.get("reason") or {}
    return [job.get("namespace"), job.get("name"), job.get("id"), job.get("queue"), job.get("phase"),
            job.get("min_member"), total, running, pending, reason.get("code"),
            render.age(job.get("created"), render.utcnow())]


def jobs_table(jobs: list[dict]) -> str:
    """The job list as a table."""
    return render.table(JOB_HEADERS, [job_row(j) for j in jobs])


def job_detail_text(job: dict) -> str:
    """`job get`: the job's row, then its tasks."""
    tasks = [[t.get("name"), t.get("role"), t.get("status"), t.get("node"),
              render.resources(t.get("request"))] for t in job.get("tasks") or []]
    text = jobs_table([job])
    return text + ("\n\n" + render.table(TASK_HEADERS, tasks) if tasks else "")


PAGE_SIZE = 50  # jobs per `job list` page
DEFAULT_NAMESPACE = "default"  # vcctl's: `job list` without -n or -A lists this namespace
FINISHED_PHASES = ("Completed", "Cancelled")


def list_params(args: argparse.Namespace) -> dict:
    """The list's query: filters, newest first, one page (`--page` of `--limit` jobs)."""
    states = [s for part in args.state or [] for s in part.split(",") if s]
    namespace = None if args.all_namespaces else (args.namespace or DEFAULT_NAMESPACE)
    return {"queue": args.queue, "namespace": namespace, "phase": states,  # the API's order: newest first
            "limit": args.limit, "offset": (args.page - 1) * args.limit}


def next_page_command(args: argparse.Namespace) -> str:
    """The `schedctl job list ...` that shows the page after this one (same filters)."""
    words = ["schedctl", "job", "list"]
    if args.all_namespaces:
        words.append("-A")
    elif args.namespace:
        words += ["-n", args.namespace]
    if args.queue:
        words += ["--queue", args.queue]
    for state in args.state or []:
        words += ["--state", state]
    if args.limit != PAGE_SIZE:
        words += ["--limit", str(args.limit)]
    return " ".join([*words, "--page", str(args.page + 1)])


def page_footer(args: argparse.Namespace, shown: int, count: int | None) -> str:
    """`jobs 1-50 of 923, newest first; next page: schedctl job list --page 2`."""
    first = (args.page - 1) * args.limit + 1
    total = f" of {count}" if count is not None else ""
    text = f"jobs {first}-{first + shown - 1}{total}, newest first"
    if count is not None and first - 1 + shown < count:
        text += f"; next page: {next_page_command(args)}"
    return text


def cmd_list(client: ApiClient, args: argparse.Namespace) -> None:
    """`job list`: one page of jobs, newest first, of one namespace (`default`) or all (-A); the
    table is followed on stderr by which jobs it shows and the command for the next page."""
    page = client.get(JOBS, list_params(args))
    jobs = page if isinstance(page, list) else (page or {}).get("results") or []
    count = None if isinstance(page, list) else (page or {}).get("count")
    if args.output != "table":
        render.emit(jobs, args.output, jobs_table)
        return
    if not jobs:
        where = "" if args.all_namespaces else f" in namespace {args.namespace or DEFAULT_NAMESPACE}"
        hint = " (-A: every namespace)" if not (args.all_namespaces or args.namespace) else ""
        at = f" on page {args.page}" if args.page > 1 else ""
        sys.stderr.write(f"No jobs found{where}{at}.{hint}\n")
        return
    render.emit(jobs, args.output, jobs_table)
    sys.stdout.flush()
    sys.stderr.write(page_footer(args, len(jobs), count) + "\n")


def cmd_get(client: ApiClient, args: argparse.Namespace) -> None:
    """`job get JOB`: the job and its tasks."""
    render.emit(resolve_job(client, args.job), args.output, job_detail_text)


def cmd_cancel(client: ApiClient, args: argparse.Namespace) -> None:
    """`job cancel JOB`: cancel it; its tasks are released. A finished job is a no-op: exit 1."""
    job = resolve_job(client, args.job)
    if job.get("phase") in FINISHED_PHASES:
        raise CliError(f"job {job_uid(job)} has already finished ({job['phase']}): nothing to cancel")
    done = client.post(f"{JOBS}{job['id']}/cancel/") or job
    render.emit(done, args.output, lambda j: f"job {job_uid(j)} {str(j.get('phase') or 'cancelled').lower()}")


def import_summary(result: dict) -> str:
    """`queue research created`, `job ml/tf created`, ... from the import answer (`(dry run)` added).

    Any `<kinds>_<verb>` list the server adds later is shown the same way.
    """
    suffix = " (dry run: nothing saved)" if result.get("dry_run") else ""
    previews = {str(c.get("name")): c["preview"] for c in result.get("changes") or []
                if isinstance(c, dict) and isinstance(c.get("preview"), dict)}
    lines = []
    for key, names in result.items():
        kinds, _, verb = key.rpartition("_")
        if not kinds or not isinstance(names, list):
            continue
        kind = _SINGULAR.get(kinds, kinds[:-1] if kinds.endswith("s") else kinds)
        for n in names:
            name = n if isinstance(n, str) else render.cell_text(n)
            preview = previews.get(name) if kind in ("job", "podgroup") else None
            where = f": {placement_words(preview)}" if preview else ""
            lines.append(f"{kind} {name} {verb}{suffix}{where}")
            if preview and preview.get("sentence"):
                lines.append(f"  {preview['sentence']}")
    return "\n".join(lines) or f"nothing to do{suffix}"


def _jobs_dry_run_supported(client: ApiClient) -> bool:
    """Whether the server's schema offers `dry_run` on POST /api/v1/jobs/ (a server without it
    would create the job, so schedctl asks before sending)."""
    schema = client.get(SCHEMA, {"format": "json"}) or {}
    post = ((schema.get("paths") or {}).get(JOBS) or {}).get("post") or {}
    return any(isinstance(p, dict) and p.get("name") == "dry_run" for p in post.get("parameters") or [])


def submit_manifest(client: ApiClient, sub: Submission, dry_run: bool) -> dict:
    """POST the manifest text to the import endpoint (all documents or none are applied)."""
    return client.post(IMPORT, params={"dry_run": "true"} if dry_run else None, raw=sub.text.encode(),
                       content_type="application/yaml", locate=sub.locate)


def cmd_submit(client: ApiClient, args: argparse.Namespace) -> None:
    """`job submit -f FILE`: a Volcano YAML manifest (vcjob, PodGroup + Pods, Queue) or a JSON job body."""
    sub = read_submission(args.filename)
    if sub.kind == "manifest":
        render.emit(submit_manifest(client, sub, args.dry_run), args.output, import_summary)
        return
    if args.dry_run and not _jobs_dry_run_supported(client):
        raise UsageError("--dry-run needs a YAML manifest: this server's POST /api/v1/jobs/ has no dry run")
    job = client.post(JOBS, sub.job, params={"dry_run": "true"} if args.dry_run else None, locate=sub.locate)
    if args.dry_run:  # the server's preview: where the job would go in the next cycle
        render.emit(job, args.output, dry_run_summary)
        return
    render.emit(job, args.output, lambda j: f"job {job_uid(j)} created" + (
        f" (id {j['id']})" if j.get("id") is not None else ""))


def placement_words(preview: dict) -> str:
    """`would be bound to n0, n1`, or `would be pending: CODE: message` (the server's preview)."""
    placement = preview.get("placement")
    if placement == "bound":
        return "would be bound to " + ", ".join(sorted(set((preview.get("nodes") or {}).values())))
    reason = preview.get("reason") or {}
    said = f": {reason.get('code')}: {reason.get('message')}" if reason else ""
    return ("would never run" if placement == "never" else f"would be {placement}") + said


def dry_run_summary(preview: dict) -> str:
    """`job ml/solo checked (dry run: nothing saved): would be bound to n0` (or pending with its
    reason, or never), then the estimated start when the server gives one."""
    lines = [f"job {preview.get('job')} checked (dry run: nothing saved): {placement_words(preview)}"]
    if preview.get("sentence"):
        lines.append(f"  {preview['sentence']}")
    return "\n".join(lines)


def add_parsers(sub: argparse._SubParsersAction,
                common: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """`job` and its subcommands; returns them, for job_write's to join."""
    job = sub.add_parser("job", help="list, show, submit, run, cancel, suspend, resume and delete jobs",
                         description="Jobs (PodGroups with their tasks). JOB is an id or namespace/name.")
    verbs = job.add_subparsers(dest="verb", metavar="COMMAND", required=True)
    p = verbs.add_parser("list", parents=[common], help="list jobs",
                         description="List jobs, newest first, one page at a time (the next page's "
                                     "command is printed on stderr), of the namespace `default` "
                                     "unless -n or -A says otherwise (vcctl's rule).")
    p.add_argument("--queue", help="only jobs of this queue")
    p.add_argument("--namespace", "-n", help="only jobs of this namespace (default: default)")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="jobs of every namespace")
    p.add_argument("--state", action="append", metavar="PHASE",
                   help="only jobs in this phase (Pending, Inqueue, Running, Completed, Cancelled, ...); "
                        "repeat or separate with commas")
    p.add_argument("--limit", type=positive, default=PAGE_SIZE,
                   help=f"jobs per page (default {PAGE_SIZE}, at most 1000)")
    p.add_argument("--page", type=positive, default=1, help="which page (1: the newest jobs)")
    p.set_defaults(func=cmd_list)
    p = verbs.add_parser("get", parents=[common], help="show a job and its tasks",
                         description="Show one job and its tasks.")
    p.add_argument("job", metavar="JOB", help="job id or namespace/name")
    p.set_defaults(func=cmd_get)
    p = verbs.add_parser("submit", parents=[common], help="submit a manifest or a JSON job body",
                         description="Submit a Volcano YAML manifest (vcjob, PodGroup with Pods, Queue; "
                                     "several documents are applied all or none) or a JSON file with "
                                     "the API's job body (POST /api/v1/jobs/).")
    p.add_argument("-f", "--filename", required=True, metavar="FILE", help="the file (- reads stdin)")
    p.add_argument("--dry-run", action="store_true", help="validate on the server, save nothing")
    p.set_defaults(func=cmd_submit)
    p = verbs.add_parser("cancel", parents=[common], help="cancel a job",
                         description="Cancel a job; its tasks are released.")
    p.add_argument("job", metavar="JOB", help="job id or namespace/name")
    p.set_defaults(func=cmd_cancel)
    return verbs

