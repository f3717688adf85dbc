"""`schedctl why JOB`: the job's reason, its queue chain with headroom, node failures, estimated start,
and the node scores of its newest recorded placements (GET /api/v1/jobs/{id}/placements/)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from schedctl import render
from schedctl.client import ApiClient
from schedctl.errors import ApiError
from schedctl.jobs import TASK_STATUSES, job_uid, resolve_job
from schedctl.queues import load_tree

CHAIN_HEADERS = ("QUEUE", "DESERVED", "ALLOCATED", "HEADROOM")
FAILURE_HEADERS = ("NODES", "REASON")
# Fields of the estimated start (issue 20); shown only when the server sends them.
ESTIMATE_KEYS = ("estimated_start", "estimate_basis")
SCORE_HEADERS = ("TASK", "NODE", "SCORES")
PLACEMENTS_SHOWN = 3  # newest recorded placements `why` asks for (the API pages through all)


def headroom(deserved: Mapping[str, Any] | None, allocated: Mapping[str, Any] | None) -> dict | None:
    """deserved - allocated per resource of `deserved`, never below zero (None when unknown)."""
    if deserved is None:
        return None
    used = allocated or {}
    return {k: max(float(v) - float(used.get(k, 0) or 0), 0.0) if _is_num(v) else v
            for k, v in deserved.items()}


def _is_num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _clean(amounts: dict | None) -> dict | None:
    """Whole floats back to ints, so JSON shows 4 rather than 4.0."""
    if amounts is None:
        return None
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in amounts.items()}


def queue_chain(job: dict, paths: dict[str, list[dict]] | None) -> tuple[list[dict], str]:
    """Levels `{queue, deserved, allocated, headroom}` and where they come from.

    The chain the scheduler recorded with the reason (`reason_details.queue_chain`) when there is
    one, else the queue tree's newest figures from the top-level queue down to the job's queue.
    """
    recorded = (job.get("reason_details") or {}).get("queue_chain")
    if isinstance(recorded, list) and recorded:
        return [dict(level) for level in recorded if isinstance(level, dict)], "reason"
    levels = []
    for node in (paths or {}).get(str(job.get("queue")), []):
        fig = node.get("figures") or {}
        levels.append({"queue": node.get("name"), "deserved": fig.get("deserved"),
                       "allocated": fig.get("allocated"),
                       "headroom": _clean(headroom(fig.get("deserved"), fig.get("allocated"))),
                       "headroom_of": "deserved"})
    return levels, "tree"


def explain(job: dict, paths: dict[str, list[dict]] | None, placements: dict | None = None) -> dict[str, Any]:
    """Everything `why` shows, as one JSON-friendly object (what `-o json|yaml` prints);
    `placements`: the job's placements answer, when the server has one."""
    reason = job.get("reason")
    details = job.get("reason_details") or {}
    chain, source = queue_chain(job, paths)
    statuses = [t.get("status") for t in job.get("tasks") or []]
    out: dict[str, Any] = {
        "job": job_uid(job), "id": job.get("id"), "queue": job.get("queue"), "phase": job.get("phase"),
        "min_member": job.get("min_member"),
        "tasks": {s: statuses.count(s) for s in [*TASK_STATUSES, *sorted(set(statuses) - set(TASK_STATUSES))]
                  if statuses.count(s)},
        "reason": reason, "queue_chain": chain, "queue_chain_source": source,
        "node_failures": details.get("node_failures") or {},
    }
    for key in ESTIMATE_KEYS:
        for holder in (job, details):
            if key in holder:
                out[key] = holder[key]
                break
    if isinstance(job.get("forecast"), dict) and job["forecast"].get("sentence"):
        out["estimate"] = job["forecast"]["sentence"]  # "expected to start in about 25 min, ..."
    if isinstance(placements, dict) and (placements.get("results") or placements.get("note")):
        out["placements"] = list(placements.get("results") or [])
        out["placements_note"] = placements.get("note") or ""
    return out


def _num(x: Any) -> str:
    return f"{float(x):.4f}".rstrip("0").rstrip(".") if _is_num(x) else str(x)


def score_words(entry: dict | None) -> str:
    """"binpack 100, nodeorder 450: total 550" (the job page's words) for one node's scores."""
    if not isinstance(entry, dict):
        return "not recorded"
    parts = ", ".join(f"{k} {_num(v)}" for k, v in sorted((entry.get("plugins") or {}).items()))
    total = f"total {_num(entry.get('total', 0))}"
    return f"{parts}: {total}" if parts else total


def score_rows(placements: list[dict]) -> list[list[str]]:
    """Per placement: the chosen node and then the other nodes of its try, best first."""
    rows = []
    for p in placements:
        rows.append([p.get("task"), f"{p.get('node')} (chosen)", score_words(p.get("chosen_scores"))])
        rows.extend([p.get("task"), e.get("node"), score_words(e)] for e in p.get("top") or []
                    if isinstance(e, dict) and e.get("node") != p.get("node"))
    return rows


# The figure a headroom is measured against, as `why` names it.
LIMIT_WORDS = {"deserved": "deserved", "capability": "capability",
               "real_capability": "capability (real: capped by what the cluster has)"}


def limit_of(chain: list[dict]) -> str:
    """The figure the chain's headroom is measured against: the recorded `headroom_of` (the
    reason's limit: deserved for the allocate check, real capability for admission and NeverFits),
    `deserved` for the tree's figures."""
    for level in chain:
        if level.get("headroom_of"):
            return str(level["headroom_of"])
    return "deserved"


def why_text(info: dict[str, Any]) -> str:
    """The explanation as `Key: value` lines, then the queue chain and node failure tables."""
    reason = info.get("reason") or {}
    tasks = ", ".join(f"{n} {s}" for s, n in info["tasks"].items()) or "none"
    rows = [("Job", f"{info['job']} (id {info['id']})"), ("Queue", info.get("queue")),
            ("Phase", info.get("phase")), ("Tasks", f"{tasks}; min member {info.get('min_member')}")]
    if reason:
        rows += [("Reason", reason.get("code")), ("Message", reason.get("message")),
                 ("Since", reason.get("since"))]
    else:
        rows.append(("Reason", "none: the job is not waiting for the scheduler"))
    if "estimated_start" in info:
        basis, sentence = info.get("estimate_basis"), info.get("estimate")
        if info["estimated_start"]:
            text = render.cell_text(info["estimated_start"]) + (f" ({basis})" if basis else "")
            text += f": {sentence}" if sentence else ""
        else:
            text = sentence or (basis or "unknown")
        rows.append(("Estimated start", text))
    width = max(len(k) for k, _ in rows) + 3  # the colon, then at least two spaces
    parts = ["\n".join(f"{k + ':':<{width}}{render.cell_text(v)}" for k, v in rows)]
    if info["queue_chain"]:
        limit = LIMIT_WORDS.get(str(limit_of(info["queue_chain"])), str(limit_of(info["queue_chain"])))
        title = ("Queue chain (as the scheduler checked it" if info["queue_chain_source"] == "reason"
                 else "Queue chain (top level to the job's queue, newest cycle")
        title += f"; headroom = {limit} - allocated):"
        parts.append(title + "\n" + render.table(CHAIN_HEADERS, [
            [level.get("queue"), render.resources(level.get("deserved")),
             render.resources(level.get("allocated")), render.resources(level.get("headroom"))]
            for level in info["queue_chain"]]))
    failures = info.get("node_failures") or {}
    if failures:
        ordered = sorted(failures.items(), key=lambda kv: (-int(kv[1]), str(kv[0])))
        parts.append("Node failures (nodes that failed one task, by reason):\n"
                     + render.table(FAILURE_HEADERS, [[n, r] for r, n in ordered]))
    if info.get("placements"):
        parts.append("Why these nodes (newest recorded placements):\n"
                     + render.table(SCORE_HEADERS, score_rows(info["placements"])))
    elif info.get("placements_note"):
        parts.append(f"Why these nodes: {info['placements_note']}")
    return "\n\n".join(parts)


def placements_of(client: ApiClient, job: dict) -> dict | None:
    """The job's newest recorded placements (None from a server without the endpoint)."""
    if not isinstance(job.get("id"), int):
        return None
    try:
        return client.get(f"/api/v1/jobs/{job['id']}/placements/", {"limit": PLACEMENTS_SHOWN})
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def cmd_why(client: ApiClient, args: argparse.Namespace) -> None:
    """`why JOB`: why the job waits (or that it does not)."""
    job = resolve_job(client, args.job)
    recorded = (job.get("reason_details") or {}).get("queue_chain")
    paths = None if recorded else load_tree(client)
    render.emit(explain(job, paths, placements_of(client, job)), args.output, why_text)


def add_parsers(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """`why JOB`."""
    p = sub.add_parser("why", parents=[common], help="why a job waits",
                       description="Why a job waits: its reason code and message, the queue chain with "
                                   "the headroom at each level, node failures, the estimated start "
                                   "when the server offers one, and why its placed tasks are on their "
                                   "nodes (the node scores the scheduler recorded).")
    p.add_argument("job", metavar="JOB", help="job id or namespace/name")
    p.set_defaults(func=cmd_why)
