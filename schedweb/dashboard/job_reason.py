"""A job's reason in words and figures, from the cycle's committed data only.

The scheduler's reason details carry its figures in output units (cores, bytes, units): the
NeverFits fields (`kind`, `dimension`, `need`, `limit`, `queue`, `limit_figure`, `tasks`...), a quota
refusal's `queue`, `check`, `limit_figure` and `insufficient: {dim: {need, left}}`, and the
`queue_chain` (root .. leaf: allocated, deserved, capability, real_capability, headroom against
`headroom_of`), all rendered at the end of the session from the figures the cycle commits as its
QueueSample rows. Sentences here are built from those numbers and shown in human units; a reason
without a chain gets the same cycle's samples (`chain_levels`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from schedweb.dashboard.selectors import QueueTree
from schedweb.dashboard.units import dim_label, fmt, fmt_output, fmt_ratio, output_map_to_stored

NEVER_FITS = "NeverFits"
QUOTA_CODES = ("QueueOverDeserved", "QueueOverCapability")
KIND_LABELS = {
    "TaskLargerThanAnyNode": "a task is larger than any node",
    "GangExceedsQueueLimit": "more than its queue may ever have",
    "GangExceedsCluster": "more than the cluster has",
    "NoNodeMatches": "no node matches its tasks",
}
FIGURE_WORDS = {
    "deserved": "deserved share",
    "real_capability": "real capability",
    "capability": "capability",
    "guarantee": "guarantee",
}


def kind_label(kind: str | None) -> str:
    """`a task is larger than any node` for a NeverFits kind (the kind itself when unknown)."""
    return KIND_LABELS.get(kind or "", kind or "")


def _who(details: Mapping[str, Any], message: str) -> str:
    if message.startswith("minResources"):
        return "its minimum resources (minResources) need"
    tasks = details.get("tasks")
    if isinstance(tasks, int) and tasks > 1:
        return f"its {tasks} tasks, which must start together, need"
    return "it needs"


def never_fits_clause(details: Mapping[str, Any], message: str = "") -> str:
    """What makes the job unrunnable, from its NeverFits details (human units)."""
    kind = details.get("kind")
    dim = str(details.get("dimension") or "cpu")
    need, limit = fmt_output(dim, details.get("need")), fmt_output(dim, details.get("limit"))
    if kind == "GangExceedsQueueLimit":
        figure = FIGURE_WORDS.get(str(details.get("limit_figure")), "limit")
        return (f"{_who(details, message)} {need}, queue {details.get('queue')} can never have more than "
                f"{limit} (its {figure})")
    if kind == "TaskLargerThanAnyNode":
        return f"one task needs {need}, the largest node it can use has {limit}"
    if kind == "GangExceedsCluster":
        nodes = details.get("nodes")
        if details.get("max_tasks") is not None:
            return (f"{_who(details, message)} {need}, the {nodes} nodes it can use hold at most "
                    f"{details.get('max_tasks')} of its tasks at once ({limit})")
        return f"{_who(details, message)} {need}, the {nodes} nodes it can use have {limit} in total"
    if kind == "NoNodeMatches":
        failures = details.get("static_failures") or {}
        ranked = sorted(failures.items(), key=lambda kv: (-int(kv[1]), kv[0]))
        why = "; ".join(f"{n} {reason}" for reason, n in ranked)
        return (f"no node matches its tasks' selector, affinity and tolerations (0 of {details.get('nodes')} "
                "nodes" + (f": {why}" if why else "") + ")")
    return message


def never_fits_sentence(details: Mapping[str, Any], message: str = "") -> str:
    """`This job can never run as submitted: it needs 160 GPUs, queue research can never have ...`."""
    return f"This job can never run as submitted: {never_fits_clause(details, message)}."


def quota_sentence(details: Mapping[str, Any]) -> str | None:
    """`Queue nlp-eval has too little room under its real capability: cpu needs 2 cores, 0 cores left.`
    (None when the reason carries no figures)."""
    queue = details.get("queue")
    insufficient = details.get("insufficient")
    if not queue or not isinstance(insufficient, dict) or not insufficient:
        return None
    figure = FIGURE_WORDS.get(str(details.get("limit_figure")), "limit")
    parts = [f"{dim_label(d) if d not in ('cpu', 'memory') else d} needs {fmt_output(d, v.get('need'))}, "
             f"{fmt_output(d, v.get('left'))} left" for d, v in sorted(insufficient.items())]
    if details.get("check") == "enqueue":
        return f"Queue {queue} cannot admit the job under its {figure}: " + "; ".join(parts) + "."
    return f"Queue {queue} has too little room under its {figure}: " + "; ".join(parts) + "."


@dataclass
class ChainCell:
    """One resource of one level: allocated against the limit the reason compares with."""

    dim: str
    allocated: float | None
    limit: float | None
    deserved: float | None
    left: float | None
    short: bool = False  # the reason's refusal is on this resource at this level

    @property
    def ratio(self) -> str:
        """`48 / 48 cores`."""
        return fmt_ratio(self.dim, self.allocated, self.limit)

    @property
    def left_text(self) -> str:
        """`0 cores left`, or a dash without a limit."""
        return "\u2014" if self.left is None else f"{fmt(self.dim, self.left)} left"

    @property
    def deserved_text(self) -> str:
        """`deserved 32 cores`."""
        return f"deserved {fmt(self.dim, self.deserved)}"


@dataclass
class ChainLevel:
    """One queue of the chain (root first) with its cells; `named`: the level the reason names."""

    queue: str
    depth: int
    state: str
    named: bool
    cells: list[ChainCell] = field(default_factory=list)


@dataclass
class Chain:
    """The chain and what its figures are measured against."""

    levels: list[ChainLevel]
    headroom_of: str
    source: str  # "reason" (the details' queue_chain) or "cycle" (the same cycle's samples)

    @property
    def limit_words(self) -> str:
        """`real capability` / `deserved share`."""
        return FIGURE_WORDS.get(self.headroom_of, self.headroom_of)


def _left(limit: float | None, allocated: float | None) -> float | None:
    if limit is None:
        return None
    return max(limit - (allocated or 0.0), 0.0)


def chain_levels(tree: QueueTree, queue: str, details: Mapping[str, Any], default_limit: str) -> Chain:
    """The job's queue chain from the reason's `queue_chain` (its own figures) when it has one, else
    from the tree (the same cycle's samples), headroom against `default_limit`."""
    named = details.get("queue")
    short = set((details.get("insufficient") or {}).keys()) if isinstance(details.get("insufficient"), dict) \
        else {details.get("dimension")} if details.get("dimension") else set()
    dims = tree.dims
    entries = details.get("queue_chain")
    levels: list[ChainLevel] = []
    if isinstance(entries, list) and entries:
        headroom_of = str(entries[0].get("headroom_of") or default_limit)
        for entry in entries:
            name = str(entry.get("queue"))
            if name == "root":
                continue
            view = tree.by_name.get(name)
            allocated = output_map_to_stored(entry.get("allocated")) or {}
            limit = output_map_to_stored(entry.get(headroom_of))
            deserved = output_map_to_stored(entry.get("deserved"))
            headroom = output_map_to_stored(entry.get("headroom"))
            level = ChainLevel(name, view.depth if view else 0, view.queue.state if view else "",
                               name == named)
            for d in dims:
                lim = None if limit is None or d not in limit else limit[d]
                left = headroom[d] if headroom is not None and d in headroom else _left(lim, allocated.get(d))
                level.cells.append(ChainCell(d, allocated.get(d, 0.0), lim,
                                             None if deserved is None else deserved.get(d, 0.0), left,
                                             name == named and d in short))
            levels.append(level)
        return Chain(levels, headroom_of, "reason")
    for view in tree.chain(queue):
        limit = view.real_capability if default_limit == "real_capability" else view.deserved
        level = ChainLevel(view.name, view.depth, view.queue.state, view.name == named)
        for d in dims:
            lim = None if not limit or d not in limit or limit[d] >= 1e30 else float(limit[d])
            alloc = view.allocated.get(d, 0.0)
            deserved = None if view.deserved is None else view.deserved.get(d, 0.0)
            marked = view.name == named and d in short
            level.cells.append(ChainCell(d, alloc, lim, deserved, _left(lim, alloc), marked))
        levels.append(level)
    return Chain(levels, default_limit, "cycle")


def insufficient_rows(details: Mapping[str, Any]) -> list[dict[str, str]]:
    """[{dim, need, left}] in human units for a quota reason's table."""
    out = []
    for d, v in sorted((details.get("insufficient") or {}).items()):
        out.append({"dim": dim_label(d), "need": fmt_output(d, v.get("need")),
                    "left": fmt_output(d, v.get("left"))})
    return out


def row_sentence(code: str, message: str, details: Mapping[str, object] | None) -> str:
    """The one line a list row shows: NeverFits and quota reasons from their figures (human
    units), any other reason as the scheduler worded it."""
    details = details if isinstance(details, Mapping) else {}
    if code == "NeverFits" and details.get("kind"):
        return never_fits_sentence(details, message)
    if code in ("QueueOverDeserved", "QueueOverCapability"):
        return quota_sentence(details) or message
    return message
