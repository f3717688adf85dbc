"""Queue reads shared by the pages: the tree with the latest cycle's committed figures.

One source of truth per cycle (issue 16, item 1): a queue's allocated, request, deserved and real
capability are the figures the newest scheduling cycle committed (its QueueSample rows), the very
numbers every reason of that cycle quotes. Only a queue the cycle did not report falls back: a
leaf to what its tasks hold now (schedweb.scheduling.selectors), a parent to the sums of its children.
Which jobs wait for a queue's share comes from their reasons (schedweb.dashboard.share_waits).
A handful of queries whatever the size of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from schedweb.core.models import Queue
from schedweb.dashboard.share_waits import ShareWait, share_waits
from schedweb.dashboard.units import add_into, dim_label, fmt, percent
from schedweb.scheduling.selectors import latest_samples, queue_tree

# Amounts below this (stored units: milli-cpu, bytes, milli-GPU) count as zero when comparing.
EPSILON = 1.0
# Where a queue's figures come from.
SOURCE_CYCLE, SOURCE_LIVE, SOURCE_CHILDREN = "cycle", "live", "children"


@dataclass
class Bar:
    """One resource of a queue: allocated and pending against deserved/guarantee in a frame."""

    dim: str
    label: str
    allocated: float
    pending: float
    deserved: float | None
    guarantee: float | None
    frame: float | None
    frame_kind: str  # "capability", "real capability" or "cluster"

    def _pct(self, value: float | None) -> float | None:
        if value is None or not self.frame:
            return None
        return min(100.0, max(0.0, round(100.0 * value / self.frame, 2)))

    @property
    def allocated_pct(self) -> float:
        """Width of the allocated segment (percent of the frame)."""
        return self._pct(self.allocated) or 0.0

    @property
    def pending_pct(self) -> float:
        """Width of the pending-demand segment, after the allocated one."""
        return max(0.0, min(100.0 - self.allocated_pct, self._pct(self.pending) or 0.0))

    @property
    def deserved_pct(self) -> float | None:
        """Position of the deserved marker."""
        return self._pct(self.deserved)

    @property
    def guarantee_pct(self) -> float | None:
        """Position of the guarantee marker (None when no guarantee)."""
        return self._pct(self.guarantee) if self.guarantee else None

    @property
    def title(self) -> str:
        """Hover text with every number of the bar."""
        return (f"{self.label}: allocated {fmt(self.dim, self.allocated)},"
                f" pending {fmt(self.dim, self.pending)}, deserved {fmt(self.dim, self.deserved)},"
                f" guarantee {fmt(self.dim, self.guarantee)},"
                f" {self.frame_kind} {fmt(self.dim, self.frame)}")

    @property
    def borrowing(self) -> bool:
        """Allocated above deserved on this resource."""
        return self.deserved is not None and self.allocated > self.deserved + EPSILON


@dataclass
class QueueView:
    """A queue with its figures, as the tree, the queue page and "my queues" show it."""

    queue: Queue
    depth: int
    path: list[str]
    allocated: dict[str, float]
    request: dict[str, float]
    pending: dict[str, float]
    deserved: dict[str, float] | None
    real_capability: dict[str, float] | None
    share: float | None
    overused: bool
    pending_jobs: int
    explanation: dict[str, Any] | None
    source: str = SOURCE_CYCLE
    child_names: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    waits: ShareWait | None = None

    @property
    def name(self) -> str:
        """The queue's name."""
        return self.queue.name

    @property
    def borrowing(self) -> bool:
        """Allocated above deserved on some resource."""
        return any(b.borrowing for b in self.bars)

    @property
    def starving(self) -> bool:
        """A waiting job's reason names this queue's share (QueueOverDeserved / QueueOverCapability
        at this queue): each job counts at the one queue its reason names, never at its ancestors."""
        return self.waits is not None

    @property
    def is_leaf(self) -> bool:
        """No child queues (only leaves hold jobs)."""
        return not self.child_names


@dataclass
class QueueTree:
    """Every queue in pre-order (parents before children, siblings by name) plus lookups."""

    rows: list[QueueView]
    by_name: dict[str, QueueView]
    dims: list[str]
    cluster_total: dict[str, float]
    has_samples: bool
    cycle_id: int | None = None
    cycle_time: datetime | None = None

    def chain(self, name: str) -> list[QueueView]:
        """The queue and its ancestors, top level first."""
        view = self.by_name[name]
        return [self.by_name[n] for n in view.path]


def _pending(request: dict[str, float], allocated: dict[str, float]) -> dict[str, float]:
    return {k: max(0.0, v - allocated.get(k, 0.0)) for k, v in request.items()}


def _frame(dim: str, queue: Queue, real_capability: dict | None,
           total: dict[str, float]) -> tuple[float | None, str]:
    # The box a queue can ever fill: its real capability from the cycle, else its own capability,
    # else the whole cluster.
    if real_capability and dim in real_capability and real_capability[dim] < 1e30:
        return float(real_capability[dim]), "real capability"
    if queue.capability and dim in queue.capability:
        return float(queue.capability[dim]), "capability"
    return total.get(dim), "cluster"


SAMPLE_KEYS = ("cycle_id", "created", "deserved", "allocated", "request", "real_capability", "share",
               "overused", "explanation")


def build_tree(cluster_total: dict[str, float], dims: list[str]) -> QueueTree:
    """The whole hierarchy with the newest cycle's figures and bars (see the module docstring)."""
    queues, children, live = queue_tree()
    samples = latest_samples(SAMPLE_KEYS)
    waits = share_waits()
    rows: list[QueueView] = []
    by_name: dict[str, QueueView] = {}

    def visit(queue: Queue, depth: int, path: list[str]) -> QueueView:
        now = live.get(queue.id) or {}
        sample = samples.get(queue.name)
        view = QueueView(
            queue=queue, depth=depth, path=[*path, queue.name], allocated={}, request={}, pending={},
            deserved=None, real_capability=None, share=None, overused=False,
            pending_jobs=int(now.get("pending_jobs") or 0), explanation=None,
            child_names=[c.name for c in children.get(queue.id, ())], waits=waits.get(queue.name))
        rows.append(view)
        by_name[queue.name] = view
        kids = [visit(c, depth + 1, view.path) for c in children.get(queue.id, ())]
        if sample is not None:
            view.allocated = dict(sample.get("allocated") or {})
            view.request = dict(sample.get("request") or {})
            view.deserved, view.real_capability = sample.get("deserved"), sample.get("real_capability")
            view.share, view.overused = sample.get("share"), bool(sample.get("overused"))
            view.explanation = sample.get("explanation")
        elif kids:
            # A parent the queue plugin does not report (flat plugins): its children's sums.
            view.source = SOURCE_CHILDREN
            for k in kids:
                add_into(view.allocated, k.allocated)
                add_into(view.request, k.request)
            if all(k.deserved is not None for k in kids):
                view.deserved = {}
                for k in kids:
                    add_into(view.deserved, k.deserved)
        else:
            # A leaf the cycle did not see (no jobs then, or no cycle yet): what its tasks hold now.
            view.source = SOURCE_LIVE
            view.allocated = dict(now.get("allocated") or {})
            view.request = dict(now.get("request") or {})
        view.pending = _pending(view.request, view.allocated)
        return view

    for top in children.get(None, ()):
        visit(top, 0, [])
    for view in rows:
        view.bars = _bars(view, dims, cluster_total)
    newest = max(samples.values(), key=lambda s: s.get("cycle_id") or 0) if samples else {}
    return QueueTree(rows=rows, by_name=by_name, dims=dims, cluster_total=cluster_total,
                     has_samples=bool(samples), cycle_id=newest.get("cycle_id"),
                     cycle_time=newest.get("created"))


def _bars(view: QueueView, dims: list[str], total: dict[str, float]) -> list[Bar]:
    bars = []
    for dim in dims:
        frame, kind = _frame(dim, view.queue, view.real_capability, total)
        deserved = None if view.deserved is None else float(view.deserved.get(dim, 0.0))
        guarantee = (view.queue.guarantee or {}).get(dim)
        bars.append(Bar(dim=dim, label=dim_label(dim), allocated=view.allocated.get(dim, 0.0),
                        pending=view.pending.get(dim, 0.0), deserved=deserved,
                        guarantee=None if guarantee is None else float(guarantee),
                        frame=frame, frame_kind=kind))
    return bars


def share_percent(view: QueueView, dim: str) -> float | None:
    """Allocated as a percentage of deserved on one resource (None without a deserved)."""
    if view.deserved is None:
        return None
    return percent(view.allocated.get(dim, 0.0), view.deserved.get(dim))
