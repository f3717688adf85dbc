"""The overview's sentences about queues, each generated from the figures it quotes.

`borrowing`: a queue whose committed allocated is above its deserved on some resource, with
both figures. `starving`: a queue named by waiting jobs' QueueOverDeserved / QueueOverCapability
reasons (schedweb.dashboard.share_waits), with the figure those reasons compare against and
what is left under it, from the same cycle's samples as the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass

from schedweb.dashboard.job_reason import FIGURE_WORDS
from schedweb.dashboard.selectors import QueueTree, QueueView
from schedweb.dashboard.units import dim_label, fmt, fmt_ratio


@dataclass
class Statement:
    """One queue and the sentence about it."""

    view: QueueView
    text: str


def _label(dim: str) -> str:
    return dim if dim in ("cpu", "memory") else dim_label(dim)


def borrowing(tree: QueueTree) -> list[Statement]:
    """Queues allocated above their deserved: `GPU 32 / 24 GPUs allocated / deserved`."""
    out = []
    for view in tree.rows:
        over = [b for b in view.bars if b.borrowing]
        if over:
            parts = [f"{_label(b.dim)} {fmt_ratio(b.dim, b.allocated, b.deserved)}" for b in over]
            out.append(Statement(view, "allocated / deserved: " + ", ".join(parts)))
    return out


def _limit(view: QueueView, figure: str) -> dict[str, float] | None:
    return view.real_capability if figure == "real_capability" else view.deserved


def starving(tree: QueueTree) -> list[Statement]:
    """Queues whose share keeps jobs waiting, in tree order: `2 waiting jobs need room in this queue
    under its real capability: cpu 48 / 48 cores allocated, 0 cores left`."""
    out = []
    for view in tree.rows:
        wait = view.waits
        if wait is None:
            continue
        jobs = "1 waiting job needs" if wait.jobs == 1 else f"{wait.jobs} waiting jobs need"
        clauses = []
        for figure in sorted(wait.limit_figures):
            limit = _limit(view, figure) or {}
            cells = []
            for dim in sorted(wait.dims):
                if dim not in limit or limit[dim] >= 1e30:
                    continue
                allocated = view.allocated.get(dim, 0.0)
                left = max(float(limit[dim]) - allocated, 0.0)
                cells.append(f"{_label(dim)} {fmt_ratio(dim, allocated, limit[dim])} allocated, "
                             f"{fmt(dim, left)} left")
            if cells:
                clauses.append(f"under its {FIGURE_WORDS.get(figure, figure)}: " + "; ".join(cells))
        text = f"{jobs} room in this queue" + (" " + "; ".join(clauses) if clauses else "")
        out.append(Statement(view, text))
    return out
