"""conformance plugin: never evict kube-system or critical pods (Volcano's `conformance`).

A candidate victim is skipped when it lives in namespace `kube-system`, or its job's priority
class is `system-cluster-critical` / `system-node-critical`. Our tasks carry no priority class
name of their own, so a task whose priority is at least Kubernetes' SystemCriticalPriority
(2000000000, the value of those classes) is treated as critical as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.framework.interface import Plugin

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

NAMESPACE_SYSTEM = "kube-system"
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000


class ConformancePlugin(Plugin):
    """Filters system and critical pods out of preemption and reclaim victims."""

    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        """Register the same evictable filter as preemptable and reclaimable."""

        def evictable(evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            victims = []
            for t in evictees:
                job = ssn.jobs.get(t.job_uid)
                if (t.namespace == NAMESPACE_SYSTEM
                        or (job is not None and job.priority_class in CRITICAL_CLASSES)
                        or t.priority >= SYSTEM_CRITICAL_PRIORITY):
                    continue
                victims.append(t)
            return victims, 1

        ssn.add_preemptable_fn(self.name, evictable)
        ssn.add_reclaimable_fn(self.name, evictable)
