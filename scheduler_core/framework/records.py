"""What plugins and actions record while a session runs, for the explanations built at close.

The vocabulary below the plugins: reason codes, a task's fit errors, a queue refusal (`refusal`:
what was refused, rendered at close by explain.reason_figures) and the wording shared by the
recorders (`format_amount`, `insufficient_message`, `gang_message`). explain/ turns the records
into one reason per job (explain.reasons.build_reasons); the framework never imports explain/.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler_core.model import TaskStatus
from scheduler_core.result import Reason, ReasonCode  # noqa: F401  (re-exported: recorders import them here)

if TYPE_CHECKING:
    from scheduler_core.model import JobInfo
    from scheduler_core.resources import Resource

GIB = 2**30
# Record details that are the recorder's own view mid-session: rendered again at close.
RENDERED_KEYS = frozenset({"refusal", "queue_chain", "limit", "failed_queue"})


def _histogram(counts: Mapping[str, int]) -> list[str]:
    # "<n> <reason>", counts descending, then by reason text: deterministic, biggest first.
    return [f"{n} {r}" for r, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n > 0]


@dataclass(slots=True)
class FitErrors:
    """Why one task fitted no node: failing node count per reason (Volcano's FitErrors)."""

    total_nodes: int
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, count: int = 1) -> None:
        """Count `count` more nodes failing for `reason`."""
        self.reasons[reason] = self.reasons.get(reason, 0) + count

    def message(self) -> str:
        """`0/20 nodes are unavailable: 12 Insufficient cpu, 8 node(s) had untolerated taint {gpu: true}.`"""
        return fit_message(self.total_nodes, self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"nodes": self.total_nodes, "reasons": dict(self.reasons)}


def fit_message(total_nodes: int, reasons: Mapping[str, int]) -> str:
    """Volcano's node fit summary; counts sorted descending, then by reason text."""
    parts = ", ".join(_histogram(reasons))
    return f"0/{total_nodes} nodes are unavailable: {parts}." if parts else \
        f"0/{total_nodes} nodes are available."


def format_amount(name: str, stored: float) -> str:
    """A stored amount in output units, short: cpu cores ("4", "0.5"), memory ("4Gi" or bytes)."""
    if name == "memory":
        if stored and stored % GIB == 0:
            return f"{stored / GIB:g}Gi"
        if stored and stored % 2**20 == 0:
            return f"{stored / 2**20:g}Mi"
        return f"{stored:.0f}"
    return f"{round(stored / 1000, 3):g}"


def insufficient_message(queue: str, names: Iterable[str], need: Resource, left: Resource,
                         what: str = "resource quota") -> str:
    """`queue training resource quota insufficient: insufficient cpu (need 10, 4 left)`.

    `need` is what the job or task asks for, `left` the headroom; one clause per name.
    """
    clauses = [f"insufficient {n} (need {format_amount(n, need.get(n))}, "
               f"{format_amount(n, max(left.get(n), 0.0))} left)" for n in names]
    return f"queue {queue} {what} insufficient: " + ", ".join(clauses)


def gang_message(job: JobInfo) -> str:
    """`3/4 tasks in gang unschedulable: pod group is not ready, 1 Pending, 4 minAvailable`.

    Unschedulable = min_available minus tasks that found a place (ready or pipelined).
    Task counts are listed per status in status order, then minAvailable (as Volcano's FitError).
    """
    # The text is a function of the counts alone, and most jobs share a few count patterns
    # (gang close and the reasons render it for every unready job): rendered once per pattern.
    key = (job.min_available, len(job.tasks), tuple((s, len(b)) for s, b in job.task_status_index.items()))
    text = _GANG_TEXT.get(key)
    if text is None:
        if len(_GANG_TEXT) >= _GANG_TEXT_MAX:
            _GANG_TEXT.clear()
        placed = job.ready_task_num() + job.waiting_task_num()
        unready = max(job.min_available - placed, 0)
        statuses = [f"{job.count(s)} {s.value}" for s in TaskStatus if job.count(s)]
        hist = ", ".join([*statuses, f"{job.min_available} minAvailable"])
        text = _GANG_TEXT[key] = (f"{unready}/{len(job.tasks)} tasks in gang unschedulable: "
                                  f"pod group is not ready, {hist}")
    return text


_GANG_TEXT: dict[tuple, str] = {}
_GANG_TEXT_MAX = 20_000  # count patterns kept (cleared when full)


def refusal(check: str, queue: str, limit: str, request: Resource | None = None) -> dict[str, Any]:
    """What a queue plugin refused, for `details["refusal"]` of its record (rendered at close).

    `check`: allocate / enqueue / overused; `limit`: the figure compared (deserved /
    real_capability); `request`: the refused task's request (allocate) or min resources (enqueue).
    """
    return {"check": check, "queue": queue, "limit": limit, "request": request}
