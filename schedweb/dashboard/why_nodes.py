"""The job page's "Why these nodes": the recorded node scores of the job's placements.

From the cycle's TaskPlacementScores (schedweb.scheduling.placement_scores): per recorded task
(newest placement first, at most PAGE_TASKS), the chosen node and the try's best nodes, each
with its total and per-plugin parts in words ("binpack 62.5, nodeorder 250: total 312.5"), and a
hint of what each plugin rewards. A placed job whose cycle recorded nothing says why.
"""

from __future__ import annotations

from typing import Any

from schedweb.core.models import Job
from schedweb.scheduling.placement_scores import (
    latest_records,
    number,
    plugin_hint,
    score_text,
    unrecorded_note,
)

PAGE_TASKS = 10  # the API (GET /api/v1/jobs/{id}/placements/) pages through the rest


def _row(entry: dict[str, Any], chosen: str, top: float, *, ranked: bool = True) -> dict[str, Any]:
    """One node of a try: its words, whether it is the chosen one, its bar width (of the best)."""
    total = float(entry.get("total", 0.0))
    return {"node": entry.get("node", ""), "text": score_text(entry), "total": number(total),
            "chosen": entry.get("node") == chosen, "pipelined": bool(entry.get("pipelined")),
            "ranked": ranked, "w": round(max(0.0, min(100.0, 100 * total / top)), 1) if top > 0 else 0}


def _ties(top: list[dict[str, Any]], chosen: dict[str, Any] | None) -> list[str]:
    """Other nodes with the chosen node's total and kind of fit (idle or future): the name decided."""
    if chosen is None:
        return []
    same = (chosen.get("total"), bool(chosen.get("pipelined")))
    return [str(e.get("node")) for e in top
            if e.get("node") != chosen.get("node") and (e.get("total"), bool(e.get("pipelined"))) == same]


def task_view(record: Any) -> dict[str, Any]:
    """What the page shows of one TaskPlacementScores row."""
    top = [e for e in (record.top or []) if isinstance(e, dict)]
    chosen = record.chosen_scores if isinstance(record.chosen_scores, dict) else None
    entries = list(top)
    if chosen is not None and all(e.get("node") != chosen.get("node") for e in top):
        entries.append(chosen)  # ranked below the recorded top nodes (preempt): shown last
    best = max((float(e.get("total", 0.0)) for e in entries), default=0.0)
    rows = [_row(e, record.node, best, ranked=i < len(top)) for i, e in enumerate(entries)]
    runners = [r for r in rows if not r["chosen"]]
    return {"task": record.task_name, "node": record.node, "pipelined": record.pipelined,
            "action": record.action, "cycle": record.cycle_id, "cycle_started": record.cycle.started,
            "chosen_text": score_text(chosen), "ties": ", ".join(_ties(top, chosen)), "rows": rows,
            "runners_up": "; ".join(f"{r['node']}: {r['text']}" for r in runners),
            "plugins": list(dict.fromkeys(p for e in entries for p in (e.get("plugins") or {})))}


def why_nodes(job: Job) -> dict[str, Any] | None:
    """The section's context, None when there is nothing to say (never placed, nothing recorded)."""
    records = list(latest_records(job.pk)[:PAGE_TASKS + 1])
    note = "" if records else unrecorded_note(job)
    if not records and not note:
        return None
    tasks = [task_view(r) for r in records[:PAGE_TASKS]]
    more = latest_records(job.pk).count() - PAGE_TASKS if len(records) > PAGE_TASKS else 0
    plugins = sorted({p for t in tasks for p in t["plugins"]})  # as score_text orders the parts
    return {"tasks": tasks, "more": more, "note": note, "unscored": bool(tasks) and not plugins,
            "hints": [(name, plugin_hint(name)) for name in plugins]}
