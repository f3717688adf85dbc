"""The queue edit form's Preview (issue 20): the answer of
schedweb.scheduling.queue_preview.preview_queue_change as the page shows it.

The answer's figures are in API units (cpu in cores, memory in bytes); a page shows them in
display units (schedweb.dashboard.units). A figure map drops the dimensions that are unlimited,
so a missing cpu or memory (or any dimension of a capability) reads "unlimited"; a scalar
missing from deserved or allocated is none of it.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from schedweb.dashboard import units

# The session figures a queue's rows show, in this order: (key, label).
FIGURES = (("deserved", "Deserved"), ("real_capability", "Real capability"),
           ("allocated", "Allocated after the next cycle"))
LIMIT_FIGURES = ("real_capability", "capability")  # a missing dimension there is no limit
ROLES = {"ancestor": "parent", "queue": "this queue", "sibling": "sibling", "other": "also moves"}
# jobs[kind] of the answer -> the heading of its list on the page.
JOB_KINDS = (("starting", "Would start tasks"), ("not_starting", "Would no longer start tasks"),
             ("losing", "Would lose tasks to reclaim"),
             ("not_losing", "Would no longer lose tasks to reclaim"))
TASKS_SHOWN = 12  # per job; the rest are counted


def _stored(figure: str, dim: str, values: dict[str, Any] | None) -> float | None:
    """One dimension of an answer's figure map in stored units (None: no map at all)."""
    if values is None:
        return None
    value = values.get(dim)
    if value is None:
        return math.inf if dim in units.BASE_DIMS or figure in LIMIT_FIGURES else 0.0
    return units.from_output(dim, value)


def _cell(figure: str, dim: str, before: dict | None, after: dict | None) -> dict[str, Any]:
    """`4 cores` when it stays, `4 cores → 6 cores` when it moves."""
    b = _stored(figure, dim, (before or {}).get(figure) if before is not None else None)
    a = _stored(figure, dim, (after or {}).get(figure) if after is not None else None)
    text_b, text_a = units.fmt(dim, b), units.fmt(dim, a)
    moved = text_b != text_a
    return {"dim": dim, "moved": moved, "before": text_b, "after": text_a,
            "text": f"{text_b} \u2192 {text_a}" if moved else text_a}


def _pair(before: Any, after: Any) -> str:
    """`1 → 2`, or `2` when it stays."""
    return f"{before} \u2192 {after}" if before != after else f"{after}"


def _share(figs: dict | None) -> str:
    share = (figs or {}).get("share")
    return "\u2014" if share is None else f"{share:.3g}"  # allocated / deserved: 0.734375 -> 0.734


def _queue_row(row: dict[str, Any], dims: list[str]) -> dict[str, Any]:
    before, after = row["before"], row["after"]
    figures = []
    if before is not None or after is not None:
        figures = [{"key": key, "label": label, "cells": [_cell(key, d, before, after) for d in dims]}
                   for key, label in FIGURES]
    weights = _pair((before or {}).get("weight", "\u2014"), (after or {}).get("weight", "\u2014"))
    return {**row, "role_label": ROLES.get(row["role"], row["role"]), "figures": figures,
            "weight": weights, "share": _pair(_share(before), _share(after)), "span": len(dims) + 1}


def _setting(field: str, value: Any) -> str:
    """A setting's value in words: resource maps in display units, booleans as yes / no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict) or (value is None and field in ("capability", "deserved", "guarantee")):
        return units.fmt_map(units.output_map_to_stored(value))
    return "\u2014" if value is None else str(value)


def _jobs(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for entry in entries:
        tasks = entry["tasks"]
        names = (list(tasks.items()) if isinstance(tasks, dict) else [(t, None) for t in tasks])
        shown = [f"{task} on {node}" if node else task for task, node in names[:TASKS_SHOWN]]
        namespace, _, name = entry["job"].partition("/")
        out.append({**entry, "namespace": namespace, "name": name, "count": len(names),
                    "shown": ", ".join(shown), "more": max(0, len(names) - TASKS_SHOWN)})
    return out


def _loss(entry: dict[str, Any]) -> dict[str, Any]:
    """One entry of the answer's `losses` in display units (None before: unlimited)."""
    dim, figure = entry["dim"], entry["figure"]
    label = dict(FIGURES).get(figure, figure)

    def text(value: float | None) -> str:
        return units.fmt(dim, math.inf if value is None else units.from_output(dim, value))

    return {**entry, "label": label.lower(), "role_label": ROLES.get(entry["role"], entry["role"]),
            "before": text(entry["before"]), "after": text(entry["after"])}


def present_preview(answer: dict[str, Any]) -> dict[str, Any]:
    """The page's view of one preview answer: changed settings, the queues' figure rows (dims as
    columns, before → after), the jobs by kind, and the violations."""
    maps = [(row.get(side) or {}).get(key) for row in answer["queues"] for side in ("before", "after")
            for key, _ in FIGURES]
    dims = units.dims_of(maps)
    computed: datetime | None = parse_datetime(answer["computed_at"]) if answer.get("computed_at") else None
    jobs = [{"kind": kind, "title": title, "jobs": _jobs(answer["jobs"][kind])} for kind, title in JOB_KINDS]
    return {
        "queue": answer["queue"], "valid": answer["valid"], "config_version": answer["config_version"],
        "computed": computed, "dims": dims,
        "violations": [{"field": field, "message": message}
                       for field, messages in answer["violations"].items() for message in messages],
        "changes": [{"field": field, "before": _setting(field, pair["before"]),
                     "after": _setting(field, pair["after"])} for field, pair in answer["changes"].items()],
        "queues": [_queue_row(row, dims) for row in answer["queues"]],
        "job_groups": [group for group in jobs if group["jobs"]],
        "losses": [_loss(e) for e in answer.get("losses", [])],
        "warnings": list(answer.get("warnings", [])),
    }
