"""Issue 33: a gang that waits costs work for what it can still do, not per task it holds.

Counted, not timed: the queue plugin's `allocatable` asks in a gang's round whose queue refuses
its tail, the tasks `TaskList.identical_after` walks for a gang filling nodes one run at a time,
the selectors the pod index encodes again in a later session over the same (kept) spec objects,
and the gang's decisions and reason, which stay those of asking task by task.
"""

from __future__ import annotations

import pytest

from scheduler_core.actions.util.ordering import TaskList
from scheduler_core.framework.conf import DEFAULT_CONF
from scheduler_core.framework.session import open_session
from scheduler_core.model import TaskInfo
from scheduler_core.plugins.proportion.proportion import ProportionPlugin
from scheduler_core.plugins.util import pod_index
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import job, node, queue, replicas, snapshot


def _gang_snapshot(tasks: int = 50, room: int = 10):
    """One 64-cpu node; a gang of `tasks` 1-cpu tasks (all needed) in a queue capped at `room` cpu."""
    gang = job("gang", queue="q", min_available=tasks, tasks=replicas("g", tasks, cpu="1"))
    return snapshot(nodes=[node("n1", cpu="64", memory="256Gi")],
                    queues=[queue("q", capability={"cpu": str(room), "memory": "256Gi"})], jobs=[gang])


def _count_asks(monkeypatch) -> list[str]:
    asked: list[str] = []
    real = ProportionPlugin.allocatable

    def counting(self, q, task):
        asked.append(task.uid)
        return real(self, q, task)

    monkeypatch.setattr(ProportionPlugin, "allocatable", counting)
    return asked


@pytest.mark.parametrize("tasks", [50, 400])
def test_a_refused_tail_is_asked_once(monkeypatch, tasks):
    asked = _count_asks(monkeypatch)
    result = run_session(_gang_snapshot(tasks))
    # The first task, the one starting the run of the nine after it, and the first refused one:
    # the same three whatever the gang's size (task by task it was one ask per refused task).
    assert asked == ["ns/g-0", "ns/g-1", "ns/g-10"]
    assert result.binds == {}
    reason = result.reasons["ns/gang"]
    assert (reason.code.value, reason.message) == (
        "NeverFits", f"gang of {tasks} tasks needs {tasks} cpu, queue q can never have more than 10")


def test_every_skipped_task_would_be_refused():
    """What the skip relies on: after the first refusal, the rule refuses each identical task."""
    real = ProportionPlugin.allocatable
    snap = _gang_snapshot()
    ssn = open_session(snap, DEFAULT_CONF)
    q = ssn.queues["q"]
    plugin = next(p for p in ssn.plugins.values() if isinstance(p, ProportionPlugin))
    tasks = sorted(snap.jobs["ns/gang"].tasks.values(), key=lambda t: int(t.name.split("-")[1]))
    for t in tasks[:10]:
        assert real(plugin, q, t)
        ssn.allocate(t, "n1")
    assert not any(real(plugin, q, t) for t in tasks[10:])


def test_identical_after_walks_a_run_once(monkeypatch):
    walked = [0]
    real = TaskInfo.sched_key

    def counting(self):
        walked[0] += 1
        return real.fget(self)

    tasks = replicas("t", 400)
    for t in tasks:
        t.namespace, t.job_uid = "ns", "ns/j"
    ssn = open_session(snapshot(nodes=[node("n1")], jobs=[job("j", tasks=tasks)]), DEFAULT_CONF)
    order = TaskList(ssn, tasks)
    monkeypatch.setattr(TaskInfo, "sched_key", property(counting))
    sizes = []
    while order:
        first = order.pop()
        sizes.append(len(order.identical_after(first)))
    assert sizes == list(range(399, -1, -1))
    # One walk over the run (399 tasks after the first, one key each) and one key per later ask
    # (pop reads the popped task's): task by task it was 399 + 398 + ... = 79,800.
    assert walked[0] < 3 * 400


def test_selectors_are_encoded_once_across_sessions():
    values = [f"v{i}" for i in range(20)]
    selector = {"matchExpressions": [{"key": "app", "operator": "In", "values": values}]}
    first = pod_index.selector_key(selector)
    pod_index._key_memo.pop(id(selector), None)
    assert pod_index.selector_key(selector) == first
    assert pod_index._key_memo[id(selector)][0] is selector  # kept with its object
    same = {"matchExpressions": [{"values": list(values), "operator": "In", "key": "app"}]}
    assert pod_index.selector_key(same) == first  # another object, the same text
