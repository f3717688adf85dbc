"""Snapshot types: node accounting (docs/semantics.md section 2), job figures, pod request rule."""

from __future__ import annotations

import pytest

from scheduler_core.model import (
    ClusterSnapshot,
    JobPhase,
    NodeInfo,
    TaskStatus,
    pod_request,
)
from tests.scheduler_core.builders import job, node, queue, replicas, res, snapshot, task

S = TaskStatus


def canon(r) -> dict[str, float]:
    """Resource as {dim: value} without zero dimensions, for exact comparisons."""
    return {k: v for k, v in r.to_canonical().items() if v}


# status -> (idle cpu, used cpu, releasing cpu, pipelined cpu, future idle cpu, on node)
NODE_TABLE = [
    (S.RUNNING, 3000, 1000, 0, 0, 3000, True),
    (S.BINDING, 3000, 1000, 0, 0, 3000, True),
    (S.BOUND, 3000, 1000, 0, 0, 3000, True),
    (S.ALLOCATED, 3000, 1000, 0, 0, 3000, True),
    (S.RELEASING, 3000, 1000, 1000, 0, 4000, True),
    (S.PIPELINED, 4000, 0, 0, 1000, 3000, True),
    (S.PENDING, 4000, 0, 0, 0, 4000, False),
    (S.SUCCEEDED, 4000, 0, 0, 0, 4000, False),
    (S.FAILED, 4000, 0, 0, 0, 4000, False),
]


@pytest.mark.parametrize("status,idle,used,releasing,pipelined,future,placed", NODE_TABLE)
def test_node_add_task_follows_seed_003_table(status, idle, used, releasing, pipelined, future, placed):
    n = node("n1", cpu="4", memory="8Gi")
    t = task("t", cpu="1", memory=None, status=status, node="n1")
    n.add_task(t)
    assert n.idle.milli_cpu == idle
    assert n.used.milli_cpu == used
    assert n.releasing.milli_cpu == releasing
    assert n.pipelined.milli_cpu == pipelined
    assert n.future_idle().milli_cpu == future
    assert ("t" in n.tasks) is placed


@pytest.mark.parametrize("status", [row[0] for row in NODE_TABLE])
def test_node_remove_task_restores_idle(status):
    n = node("n1", cpu="4", memory="8Gi")
    t = task("t", cpu="1", memory="1Gi", status=status, node="n1")
    n.add_task(t)
    n.remove_task(t)
    assert canon(n.idle) == {"cpu": 4000, "memory": 8 * 2**30}
    assert canon(n.used) == {} and canon(n.releasing) == {} and canon(n.pipelined) == {}
    assert n.tasks == {}


def test_future_idle_seed_example():
    # Node accounting (docs/semantics.md section 2):
    # Idle 100m, Releasing 500m, Pipelined 300m -> FutureIdle 300m.
    n = node("n1", cpu="1", memory="1Gi")
    n.add_task(task("run", cpu="400m", memory=None, status=S.RUNNING, node="n1"))
    n.add_task(task("rel", cpu="500m", memory=None, status=S.RELEASING, node="n1"))
    n.add_task(task("pip", cpu="300m", memory=None, status=S.PIPELINED, node="n1"))
    assert n.idle.milli_cpu == pytest.approx(100)
    assert n.used.milli_cpu == pytest.approx(900)
    assert n.releasing.milli_cpu == pytest.approx(500)
    assert n.future_idle().milli_cpu == pytest.approx(300)


def test_node_update_task_moves_running_to_releasing():
    n = node("n1", cpu="4")
    t = task("t", cpu="1", memory=None, status=S.RUNNING, node="n1")
    n.add_task(t)
    n.update_task(t, S.RELEASING)
    assert (n.idle.milli_cpu, n.used.milli_cpu, n.releasing.milli_cpu) == (3000, 1000, 1000)
    assert t.status is S.RELEASING


def test_pod_request_rule_seed_example():
    containers = [res("500m", "1Gi"), res("300m", "512Mi")]
    inits = [res("1000m", "512Mi"), res("200m", "2Gi")]
    assert canon(pod_request(containers, inits)) == {"cpu": 1000, "memory": 2 * 2**30}
    assert canon(pod_request(containers)) == {"cpu": 800, "memory": 1.5 * 2**30}


def _mixed_job():
    statuses = [S.PENDING, S.PENDING, S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING,
                S.RELEASING, S.SUCCEEDED, S.FAILED]
    tasks = [task(f"t{i}", cpu="1", memory=None, status=s, node=None) for i, s in enumerate(statuses)]
    return job("j", tasks=tasks, min_available=5)


def test_job_figures_follow_volcano_counts():
    snap = snapshot(jobs=[_mixed_job()])
    j = snap.jobs["ns/j"]
    assert j.ready_task_num() == 5  # Allocated, Binding, Bound, Running, Succeeded
    assert j.waiting_task_num() == 1
    assert j.valid_task_num() == 8  # all but Releasing and Failed
    assert sorted(t.name for t in j.pending_tasks()) == ["t0", "t1"]
    assert j.allocated.milli_cpu == 4000  # Allocated, Binding, Bound, Running
    assert j.total_request.milli_cpu == 8000  # all but Succeeded and Failed
    assert j.is_ready() and j.is_pipelined() and not j.is_starving()


def test_update_task_status_keeps_sums_exact():
    snap = snapshot(jobs=[job("j", tasks=replicas("w", 3, cpu="1", memory="1Gi"))])
    j = snap.jobs["ns/j"]
    w0 = j.tasks["ns/w-0"]
    j.update_task_status(w0, S.ALLOCATED)
    assert canon(j.allocated) == {"cpu": 1000, "memory": 2**30}
    j.update_task_status(w0, S.SUCCEEDED)
    assert canon(j.allocated) == {}
    assert j.total_request.milli_cpu == 2000
    j.update_task_status(w0, S.PENDING)
    assert j.total_request.milli_cpu == 3000
    assert set(j.task_status_index) == {S.PENDING}
    assert len(j.task_status_index[S.PENDING]) == 3


@pytest.mark.parametrize("statuses,expect_ready,expect_pipelined,expect_starving", [
    ({"ps": [S.RUNNING], "worker": [S.RUNNING, S.RUNNING]}, True, True, False),
    ({"ps": [S.RUNNING], "worker": [S.RUNNING, S.PENDING]}, False, False, True),
    ({"ps": [S.RUNNING], "worker": [S.RUNNING, S.PIPELINED]}, False, True, False),
    ({"ps": [S.PENDING], "worker": [S.RUNNING, S.RUNNING, S.RUNNING]}, False, False, True),
])
def test_per_role_minimums(statuses, expect_ready, expect_pipelined, expect_starving):
    tasks = [task(f"{role}-{i}", status=s, role=role)
             for role, ss in statuses.items() for i, s in enumerate(ss)]
    j = snapshot(jobs=[job("j", tasks=tasks, min_available=3,
                           task_min_available={"ps": 1, "worker": 2})]).jobs["ns/j"]
    assert j.check_task_ready() is expect_ready
    assert j.check_task_pipelined() is expect_pipelined
    assert j.check_task_starving() is expect_starving
    assert j.check_task_valid() is True


def test_role_checks_skipped_when_roles_exceed_min_available():
    j = snapshot(jobs=[job("j", tasks=[task("a", role="x")], min_available=1,
                           task_min_available={"x": 1, "y": 1})]).jobs["ns/j"]
    assert j.check_task_ready() is True and j.check_task_starving() is True


def test_no_role_minimums():
    j = snapshot(jobs=[job("j", tasks=[task("a")], min_available=1)]).jobs["ns/j"]
    assert (j.check_task_ready(), j.check_task_pipelined(), j.check_task_valid()) == (True, True, True)
    assert j.check_task_starving() is False


def test_pending_best_effort_counts_as_ready():
    j = snapshot(jobs=[job("j", min_available=2, tasks=[
        task("a", status=S.RUNNING), task("b", cpu=None, memory=None)])]).jobs["ns/j"]
    assert j.ready_task_num() == 1
    assert j.pending_best_effort_task_num() == 1
    assert j.is_ready()
    j.update_task_status(j.tasks["ns/b"], S.ALLOCATED)
    assert j.pending_best_effort_task_num() == 0
    j.update_task_status(j.tasks["ns/b"], S.PENDING)
    assert j.pending_best_effort_task_num() == 1


def test_elastic_resources_above_min_resources():
    j = snapshot(jobs=[job("j", min_resources={"cpu": "2", "memory": "4Gi"},
                           tasks=replicas("w", 3, cpu="1", memory="1Gi", status=S.RUNNING))]).jobs["ns/j"]
    assert canon(j.elastic_resources()) == {"cpu": 1000}
    assert canon(j.deducted_min_resources()) == {"cpu": 2000, "memory": 4 * 2**30}
    assert canon(snapshot(jobs=[job("k")]).jobs["ns/k"].get_min_resources()) == {}


def test_sched_key_groups_identical_tasks():
    a, b = task("a", node_selector={"zone": "x"}), task("b", node_selector={"zone": "x"})
    c = task("c", node_selector={"zone": "y"})
    d = task("d", cpu="2", node_selector={"zone": "x"})
    assert a.sched_key == b.sched_key
    assert a.sched_key != c.sched_key and a.sched_key != d.sched_key
    assert task("e", cpu=None, memory=None).best_effort and not a.best_effort


def test_build_wires_nodes_queues_and_root():
    snap = snapshot(
        nodes=[node("n2"), node("n1")],
        queues=[queue("a"), queue("b", parent="a"), queue("c", parent="root")],
        jobs=[job("j", queue="b", tasks=[task("t", cpu="1", memory="1Gi", status=S.RUNNING, node="n2")])],
    )
    assert list(snap.nodes) == ["n1", "n2"]
    assert snap.queues["root"].children == ["a", "c"]
    assert snap.queues["a"].children == ["b"] and snap.queues["a"].parent == "root"
    assert snap.queues["b"].is_leaf and not snap.queues["a"].is_leaf
    assert snap.nodes["n2"].idle.milli_cpu == 3000
    assert snap.jobs["ns/j"].tasks["ns/t"].job_uid == "ns/j"
    assert snap.jobs["ns/j"].phase is JobPhase.INQUEUE


def test_build_rejects_unknown_node_and_queue_parent():
    with pytest.raises(ValueError, match="unknown node n9"):
        snapshot(jobs=[job("j", tasks=[task("t", status=S.RUNNING, node="n9")])])
    with pytest.raises(ValueError, match="unknown parent zz"):
        ClusterSnapshot.build(queues=[queue("a", parent="zz")])


def test_fresh_node_is_idle():
    n = NodeInfo(name="n", allocatable=res("2", "1Gi"))
    assert canon(n.idle) == {"cpu": 2000, "memory": 2**30}
