"""Queue reads shared by the pages: the tree with its latest figures, set-based.

Figures come from the API's selectors (allocated / request / pending jobs, rolled up the tree)
and the newest cycle's QueueSample rows (deserved, real capability, share); four queries
whatever the size of the tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schedweb.api.selectors import queue_tree
from schedweb.core.models import Queue
from schedweb.dashboard import cycles
from schedweb.dashboard.units import add_into, dim_label, fmt, percent

# Amounts below this (stored units: milli-cpu, bytes, milli-GPU) count as zero when comparing.
EPSILON = 1.0


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

    @property
    def starving(self) -> bool:
        """Pending demand while allocated is below deserved on this resource."""
        return (self.deserved is not None and self.pending > EPSILON
                and self.allocated + EPSILON < self.deserved)


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
    child_names: list[str] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)

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
        """Jobs pending while allocated is below deserved on every resource they still need
        (a queue at its deserved share on one of them waits for itself, not for others)."""
        wanted = [b for b in self.bars if b.pending > EPSILON]
        return self.pending_jobs > 0 and bool(wanted) and all(b.starving for b in wanted)

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

    def chain(self, name: str) -> list[QueueView]:
        """The queue and its ancestors, top level first."""
        view = self.by_name[name]
        return [self.by_name[n] for n in view.path]


def _first(figures: dict[str, Any], sample: dict[str, Any], key: str) -> Any:
    """The API's figure when it has one (the cycle-only figures may move there), else the sample's."""
    value = figures.get(key)
    return sample.get(key) if value is None else value


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


def build_tree(cluster_total: dict[str, float], dims: list[str]) -> QueueTree:
    """The whole hierarchy with figures and bars; parents without a sample get their children's
    deserved summed (proportion computes deserved for leaves only)."""
    queues, children, figures = queue_tree()
    samples = cycles.latest_samples()
    rows: list[QueueView] = []
    by_name: dict[str, QueueView] = {}

    def visit(queue: Queue, depth: int, path: list[str]) -> QueueView:
        fig = figures.get(queue.id) or {}
        sample = samples.get(queue.name) or {}
        allocated = dict(fig.get("allocated") or {})
        request = dict(fig.get("request") or {})
        view = QueueView(
            queue=queue, depth=depth, path=[*path, queue.name], allocated=allocated, request=request,
            pending=_pending(request, allocated), deserved=_first(fig, sample, "deserved"),
            real_capability=_first(fig, sample, "real_capability"), share=_first(fig, sample, "share"),
            overused=bool(sample.get("overused")), pending_jobs=int(fig.get("pending_jobs") or 0),
            explanation=sample.get("explanation"),
            child_names=[c.name for c in children.get(queue.id, ())])
        rows.append(view)
        by_name[queue.name] = view
        kids = [visit(c, depth + 1, view.path) for c in children.get(queue.id, ())]
        if view.deserved is None and kids and all(k.deserved is not None for k in kids):
            summed: dict[str, float] = {}
            for k in kids:
                add_into(summed, k.deserved)
            view.deserved = summed
        return view

    for top in children.get(None, ()):
        visit(top, 0, [])
    for view in rows:
        view.bars = _bars(view, dims, cluster_total)
    return QueueTree(rows=rows, by_name=by_name, dims=dims, cluster_total=cluster_total,
                     has_samples=bool(samples))


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
