"""rescheduling: evict tasks from over-used nodes so they land on under-used ones (as in Volcano).

Volcano's rescheduling plugin with its lowNodeUtilization strategy, as a victim-tasks callback
(the preempt action evicts what it returns). Arguments (Volcano's shape):

    interval: 5m                     # Go duration or seconds; default 5m
    lastRun: 1767225600              # unix seconds of the previous run (see below); optional
    strategies:
      - name: lowNodeUtilization
        params:
          thresholds: {cpu: 20, memory: 20, pods: 20}          # percent; default 100 each
          targetThresholds: {cpu: 80, memory: 80, pods: 80}    # percent; default 100 each
          thresholdPriorityClassName: system-cluster-critical  # or thresholdPriority: <int>

`thresholds` / `targetThresholds` are also accepted directly under `arguments`.
Interval: Volcano keeps the last run time in a process global; to stay deterministic (same
input, same result) we take it from the `lastRun` argument, and run when it is absent or
`now - lastRun >= interval`. The caller that runs cycles supplies it.
Utilization per node: cpu and memory from fresh usage metrics (as the usage plugin judges them)
else from requests (`used`), pods from the tasks occupying the node. Low nodes: schedulable and
every thresholds dimension at or below its threshold. High nodes: some targetThresholds
dimension above its target. No victims when no node is low, every node is low, or none is high.
Otherwise headroom = sum over low nodes of (target - usage); high nodes (cpu + memory fraction,
descending, then name) give up Running, preemptable tasks below the threshold priority (lowest
priority first, then uid) while the node is still above a target and every headroom dimension
is positive; each victim moves its request from the node's usage out of the headroom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Plugin
from scheduler_core.model import OCCUPYING_STATUSES, TaskStatus
from scheduler_core.plugins.util.durations import parse_duration
from scheduler_core.plugins.util.node_usage import fresh_usage

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import NodeInfo, TaskInfo

DEFAULT_INTERVAL = 300.0
LOW_NODE_UTILIZATION = "lowNodeUtilization"
DIMS = ("cpu", "memory", "pods")
# Kubernetes' system-cluster-critical priority: such tasks are never rescheduling victims.
SYSTEM_CLUSTER_CRITICAL = 2_000_000_000


@dataclass
class LowNodeUtilizationConf:
    """lowNodeUtilization parameters (percentages per dimension)."""

    thresholds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(DIMS, 100.0))
    target_thresholds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(DIMS, 100.0))
    threshold_priority_class: str = "system-cluster-critical"
    threshold_priority: int | None = None


def _percentages(raw: Any, default: dict[str, float]) -> dict[str, float]:
    if not isinstance(raw, dict):
        return dict(default)
    return {str(k): float(v) for k, v in raw.items() if str(k) in DIMS and not isinstance(v, bool)}


def parse_lnu(params: dict[str, Any]) -> LowNodeUtilizationConf:
    """LowNodeUtilizationConf from a strategy's params (missing keys keep the defaults)."""
    conf = LowNodeUtilizationConf()
    conf.thresholds = _percentages(params.get("thresholds"), conf.thresholds)
    conf.target_thresholds = _percentages(params.get("targetThresholds"), conf.target_thresholds)
    conf.threshold_priority_class = str(params.get("thresholdPriorityClassName",
                                                   conf.threshold_priority_class))
    if params.get("thresholdPriority") is not None:
        conf.threshold_priority = int(params["thresholdPriority"])
    return conf


@dataclass
class NodeUtilization:
    """One node's capacity and current usage in stored units (pods as a count)."""

    node: NodeInfo
    capacity: dict[str, float]
    usage: dict[str, float]
    tasks: list[TaskInfo]

    def limit(self, dim: str, percent: float) -> float:
        """`percent` of the node's capacity in `dim`."""
        return self.capacity[dim] * percent / 100.0

    def above(self, thresholds: dict[str, float]) -> bool:
        """Some dimension above its threshold."""
        return any(self.usage[d] > self.limit(d, p) for d, p in thresholds.items())

    def score(self) -> float:
        """cpu + memory fraction used (Volcano's getScoreForNode)."""
        return sum(self.usage[d] / self.capacity[d] for d in ("cpu", "memory") if self.capacity[d] > 0)


def node_utilization(node: NodeInfo, now: float) -> NodeUtilization:
    """Capacity and usage: cpu/memory from fresh metrics, else requests; pods by occupying tasks."""
    alloc = node.allocatable
    capacity = {"cpu": alloc.milli_cpu, "memory": alloc.memory, "pods": float(alloc.max_task_num)}
    metrics = fresh_usage(node, now)
    tasks = [t for t in node.tasks.values() if t.status in OCCUPYING_STATUSES]
    if metrics is not None and "cpu" in metrics and "memory" in metrics:
        usage = {d: metrics[d] / 100 * capacity[d] for d in ("cpu", "memory")}
    else:
        usage = {"cpu": node.used.milli_cpu, "memory": node.used.memory}
    usage["pods"] = float(len(tasks))
    return NodeUtilization(node, capacity, usage, tasks)


def low_node_utilization_victims(ssn: Session, conf: LowNodeUtilizationConf) -> list[TaskInfo]:
    """Victims of the lowNodeUtilization strategy (see the module docstring)."""
    utils = [node_utilization(ssn.nodes[name], ssn.now) for name in sorted(ssn.nodes)]
    low = [u for u in utils if not u.node.unschedulable and not u.above(conf.thresholds)]
    high = [u for u in utils if u.above(conf.target_thresholds)]
    if not low or len(low) == len(utils) or not high:
        return []
    targets = conf.target_thresholds
    headroom = {d: sum(u.limit(d, p) - u.usage[d] for u in low) for d, p in targets.items()}
    limit = conf.threshold_priority
    if limit is None:
        pc = ssn.priority_classes.get(conf.threshold_priority_class)
        limit = pc.value if pc is not None else SYSTEM_CLUSTER_CRITICAL
    victims: list[TaskInfo] = []
    for u in sorted(high, key=lambda u: (-u.score(), u.node.name)):
        candidates = sorted((t for t in u.tasks if t.status is TaskStatus.RUNNING and t.preemptable
                             and ssn.jobs[t.job_uid].preemptable and t.priority < limit),
                            key=lambda t: (t.priority, t.uid))
        for task in candidates:
            if not u.above(targets) or any(v <= 0 for v in headroom.values()):
                break
            moved = {"cpu": task.resreq.milli_cpu, "memory": task.resreq.memory, "pods": 1.0}
            for d in DIMS:
                u.usage[d] -= moved[d]
                if d in headroom:
                    headroom[d] -= moved[d]
            victims.append(task)
    return victims


class ReschedulingPlugin(Plugin):
    """Periodic victim selection that evens out node utilization."""

    name = "rescheduling"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.warnings: list[str] = []
        a = self.arguments
        try:
            self.interval = parse_duration(a.get("interval", DEFAULT_INTERVAL))
        except ValueError:
            self.warnings.append(f"rescheduling: invalid interval {a.get('interval')!r}; using 5m")
            self.interval = DEFAULT_INTERVAL
        last = a.get("lastRun")
        self.last_run = float(last) if isinstance(last, int | float) and not isinstance(last, bool) else None
        self.strategies: list[LowNodeUtilizationConf] = []
        raw = a.get("strategies")
        if raw is None:
            self.strategies.append(parse_lnu(a))
        for s in raw if isinstance(raw, list) else []:
            name = s.get("name") if isinstance(s, dict) else s
            if name == LOW_NODE_UTILIZATION:
                self.strategies.append(parse_lnu({**a, **(s.get("params") or {})}))
            else:
                self.warnings.append(f"rescheduling: strategy {name!r} is not supported; ignored")
        self.ran = False

    def time_to_run(self, now: float) -> bool:
        """True when no previous run is known or the interval has passed since it."""
        return self.last_run is None or now - self.last_run >= self.interval

    def on_session_open(self, ssn: Session) -> None:
        """Register the victim-tasks callback when it is time to run."""
        ssn.result.warnings.extend(self.warnings)
        self.ran = bool(self.strategies) and self.time_to_run(ssn.now)
        if not self.ran:
            return

        def victims() -> list[TaskInfo]:
            seen: dict[str, TaskInfo] = {}
            for conf in self.strategies:
                for t in low_node_utilization_victims(ssn, conf):
                    seen.setdefault(t.uid, t)
            return list(seen.values())

        ssn.add_victim_tasks_fn(self.name, victims)
