"""priority plugin: job and task order by priority, priority-based victims, job starving.

Volcano's `priority` plugin: higher priority first; a preemptor may only evict tasks of
lower-priority jobs (or, inside its own job, lower-priority tasks); a job is starving while
its ready + pipelined tasks are fewer than all its tasks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.framework.interface import Plugin

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo, TaskInfo


def _higher_first(lp: int, rp: int) -> int:
    """-1 when lp > rp (l goes first), 1 when lower, 0 on equal priority."""
    if lp == rp:
        return 0
    return -1 if lp > rp else 1


class PriorityPlugin(Plugin):
    """Orders jobs and tasks by priority and picks lower-priority victims."""

    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        """Register task/job order, preemptable and job starving."""

        def task_order(l: TaskInfo, r: TaskInfo) -> int:  # noqa: E741
            return _higher_first(l.priority, r.priority)

        def job_order(l: JobInfo, r: JobInfo) -> int:  # noqa: E741
            return _higher_first(l.priority, r.priority)

        def preemptable(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            pjob = ssn.jobs[preemptor.job_uid]
            victims: list[TaskInfo] = []
            for t in preemptees:
                if t.job_uid != pjob.uid:
                    # Between jobs: only jobs of strictly lower priority give way.
                    if ssn.jobs[t.job_uid].priority < pjob.priority:
                        victims.append(t)
                elif t.priority < preemptor.priority:
                    # Inside one job: task priorities decide.
                    victims.append(t)
            return victims, 1

        def job_starving(job: JobInfo) -> bool:
            return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)

        ssn.add_task_order_fn(self.name, task_order)
        ssn.add_job_order_fn(self.name, job_order, key_fn=lambda job: -job.priority)
        ssn.add_preemptable_fn(self.name, preemptable)
        ssn.add_job_starving_fn(self.name, job_starving)
