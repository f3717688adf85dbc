"""What one scheduling session decided: binds, evictions, phases, queue figures, reasons.

`SessionResult.to_json()` is the `--json` output shape of scenario-format.md: resources in
output units (cpu cores, memory bytes, scalars in their own units, never pods), shares
rounded to 4 decimals, `conditions` per job as PodGroup `status.conditions` lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler_core.resources import Resource

# Decimals of a recorded node score in the JSON.
SCORE_DECIMALS = 4


class ReasonCode(StrEnum):
    """Reason codes of docs/semantics.md section 7 (value = name)."""

    NeverFits = "NeverFits"
    # Not in the semantics' list: the job's evaluation went over its work budget this cycle
    # (framework.work_budget); it is tried again next cycle.
    Deferred = "Deferred"
    QueueClosed = "QueueClosed"
    InvalidJob = "InvalidJob"
    NotEnqueued = "NotEnqueued"
    QueueOverCapability = "QueueOverCapability"
    QueueOverDeserved = "QueueOverDeserved"
    GangUnschedulable = "GangUnschedulable"
    NodeFit = "NodeFit"
    WaitingForPreemption = "WaitingForPreemption"
    Unknown = "Unknown"


@dataclass(eq=False)
class Reason:
    """One job's reason: code, one-line message with numbers, details (queue_chain, node_failures)."""

    code: ReasonCode
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """`{"code", "message", "details"}` as in the scenario output."""
        return {"code": str(self.code), "message": self.message, "details": dict(self.details)}


def score_round(x: float) -> float:
    """A score as the JSON shows it: SCORE_DECIMALS decimals, never "-0.0"."""
    return round(float(x), SCORE_DECIMALS) + 0.0


@dataclass(frozen=True)
class NodeScore:
    """One node's scores in a try: the total the action ranked by and each plugin's part."""

    node: str
    total: float
    plugins: dict[str, float]
    pipelined: bool = False  # the task would only be pipelined there (future idle fits, or preempt)

    def to_json(self) -> dict[str, Any]:
        """{"node", "total", "plugins": {plugin: score}, "pipelined"}, floats to 4 decimals."""
        return {"node": self.node, "total": score_round(self.total),
                "plugins": {name: score_round(v) for name, v in self.plugins.items()},
                "pipelined": self.pipelined}


@dataclass(frozen=True)
class TaskScores:
    """A task's last placement try: who tried, where it ended up, the best nodes, the chosen one."""

    action: str
    chosen: str | None
    pipelined: bool
    top: list[NodeScore] = field(default_factory=list)
    chosen_scores: NodeScore | None = None

    def to_json(self) -> dict[str, Any]:
        """The "node_scores" entry of one task in `SessionResult.to_json()`."""
        return {"action": self.action, "chosen": self.chosen, "pipelined": self.pipelined,
                "top": [e.to_json() for e in self.top],
                "chosen_scores": self.chosen_scores.to_json() if self.chosen_scores is not None else None}


# Resource figures of a queue, in output order.
FIGURE_NAMES = ("deserved", "allocated", "request", "inqueue", "elastic", "capability",
                "real_capability", "guarantee")


@dataclass(eq=False)
class QueueFigures:
    """Per-queue figures a queue plugin reports (None = not computed / not set)."""

    deserved: Resource | None = None
    allocated: Resource | None = None
    request: Resource | None = None
    inqueue: Resource | None = None
    elastic: Resource | None = None
    capability: Resource | None = None
    real_capability: Resource | None = None
    guarantee: Resource | None = None
    share: float = 0.0
    weight: int = 1
    overused: bool = False

    def to_json(self) -> dict[str, Any]:
        """Set figures in output units plus `share` (4 decimals); unset figures are left out."""
        out: dict[str, Any] = {}
        for name in FIGURE_NAMES:
            value = getattr(self, name)
            if value is not None:
                out[name] = value.to_quantities()
        out["share"] = round(self.share, 4)
        return out


# PodGroup condition types and reasons (Volcano's scheduling API and gang plugin).
UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
GANG_READY = "tasks in gang are ready to be scheduled"


def rfc3339(seconds: float) -> str:
    """Unix seconds as Kubernetes writes a time (`2026-01-01T00:00:00Z`, whole seconds)."""
    return datetime.fromtimestamp(int(seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class PodGroupCondition:
    """One PodGroup `status.conditions` entry, as Volcano's gang plugin sets it at session close.

    `transition_time` is the session's clock (unix seconds); whoever stores conditions keeps the
    stored time while type, status, reason and message stay the same (`same_as`).
    """

    type: str
    reason: str
    message: str
    transition_time: float
    status: str = "True"

    def same_as(self, stored: dict[str, Any]) -> bool:
        """Whether a stored condition (`to_json()` shape) says the same, its time aside."""
        return all(stored.get(k) == v for k, v in
                   (("type", self.type), ("status", self.status), ("reason", self.reason),
                    ("message", self.message)))

    def to_json(self) -> dict[str, Any]:
        """Kubernetes' shape: type, status, reason, message, lastTransitionTime."""
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message,
                "lastTransitionTime": rfc3339(self.transition_time)}


def merge_conditions(stored: list[dict[str, Any]] | None, new: PodGroupCondition) -> list[dict[str, Any]]:
    """Volcano's UpdatePodGroupCondition: the condition of the new one's type replaced (added when
    absent), the others kept; an unchanged condition keeps its stored transition time."""
    out = [dict(c) for c in stored or () if isinstance(c, dict)]
    for i, cond in enumerate(out):
        if cond.get("type") == new.type:
            if not new.same_as(cond):
                out[i] = new.to_json()
            return out
    out.append(new.to_json())
    return out


@dataclass(eq=False)
class SessionResult:
    """Everything a session decided; filled by the session, the actions and the queue plugins."""

    binds: dict[str, str] = field(default_factory=dict)
    pipelined: dict[str, str] = field(default_factory=dict)
    evictions: list[str] = field(default_factory=list)
    job_phase: dict[str, str] = field(default_factory=dict)
    queues: dict[str, QueueFigures] = field(default_factory=dict)
    reasons: dict[str, Reason] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # queue name -> the queue plugin's explanation object (dashboard "why this share").
    explanations: dict[str, dict] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    # Jobs set aside for this session (framework.isolation): uid -> {where, error, message, field}.
    job_errors: dict[str, dict[str, str]] = field(default_factory=dict)
    # Only when the session recorded scores (run_session(record_scores=...)), else None: task uid
    # -> the per-node scores of its last placement try (TaskScores, recorded by explain.node_scores:
    # action, chosen node, pipelined, top nodes best first, the chosen node's scores).
    node_scores: dict[str, TaskScores] | None = None
    # job uid -> the PodGroup condition the gang plugin set at close (none for a job it skipped).
    conditions: dict[str, PodGroupCondition] = field(default_factory=dict)
    # Work units of the session (framework.work_budget.WorkMeter.summary): units, budget,
    # deferred (job uid -> units when stopped), max_job.
    work: dict[str, Any] = field(default_factory=dict)
    # The session's sharding view (framework.sharding.ShardView.summary), None without one.
    sharding: dict[str, Any] | None = None
    # Counts the actions keep for the operator (`count`): e.g. preempt's `preemption_attempts`.
    counters: dict[str, int] = field(default_factory=dict)
    # Per-job figures a plugin reports at session close: figure -> job uid -> value (drf's
    # `job_share`). The framework stores them, never reads them.
    job_gauges: dict[str, dict[str, float]] = field(default_factory=dict)

    def warn(self, message: str) -> None:
        """Add a warning once (plugins may be built more than once per process)."""
        if message not in self.warnings:
            self.warnings.append(message)

    def count(self, name: str, n: int = 1) -> None:
        """Add `n` to the session's counter `name`."""
        self.counters[name] = self.counters.get(name, 0) + n

    def to_json(self) -> dict[str, Any]:
        """The scenario-format.md output shape (keys sorted where they are maps); `node_scores`
        only when recorded (scores rounded to 4 decimals)."""
        out: dict[str, Any] = {
            "binds": dict(sorted(self.binds.items())),
            "pipelined": dict(sorted(self.pipelined.items())),
            "evictions": list(self.evictions),
            "job_phase": dict(sorted(self.job_phase.items())),
            "queues": {name: self.queues[name].to_json() for name in sorted(self.queues)},
            "reasons": {uid: _reason_json(self.reasons[uid]) for uid in sorted(self.reasons)},
            "warnings": list(self.warnings),
            "job_errors": dict(sorted(self.job_errors.items())),
            "timing": dict(self.timing),
            "conditions": {uid: [self.conditions[uid].to_json()] for uid in sorted(self.conditions)},
        }
        if self.sharding is not None:
            out["sharding"] = self.sharding
        if self.node_scores is not None:
            out["node_scores"] = {uid: self.node_scores[uid].to_json() for uid in sorted(self.node_scores)}
        return out


def _reason_json(reason: Any) -> dict[str, Any]:
    # Reason objects serialise themselves; a plain dict is passed through.
    return reason.to_json() if hasattr(reason, "to_json") else dict(reason)
