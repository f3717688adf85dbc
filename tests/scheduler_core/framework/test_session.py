"""Session: plugin lifecycle, predicates (cached, first failure blamed), scores, close_session."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler_core.framework.interface import Action, Plugin
from scheduler_core.framework.session import Session, close_session, open_session
from scheduler_core.model import JobPhase, TaskStatus
from scheduler_core.scheduler import run_session
from tests.scheduler_core.builders import conf, job, node, replicas, snapshot, task
from tests.scheduler_core.listed import listed

S = TaskStatus


def test_open_and_close_call_plugins_in_tier_order():
    calls: list[str] = []

    class P(Plugin):
        def on_session_open(self, ssn):
            calls.append(f"open {self.name} {self.arguments}")

        def on_session_close(self, ssn):
            calls.append(f"close {self.name}")

    made = [type(f"P{name}", (P,), {"name": name}) for name in ("_t_a", "_t_b", "_t_c")]
    with listed(*made):
        c = conf("allocate", [["_t_b", {"name": "_t_a", "arguments": {"k": 1}}], ["_t_c"]])
        ssn = open_session(snapshot(), c)
        assert list(ssn.plugins) == ["_t_b", "_t_a", "_t_c"]
        close_session(ssn)
    assert calls == ["open _t_b {}", "open _t_a {'k': 1}", "open _t_c {}",
                     "close _t_b", "close _t_a", "close _t_c"]


def session(nodes=None, jobs=(), tiers=(("predicates", "nodeorder", "gang"),)):
    nodes = nodes or [node("n1"), node("n2"), node("n3")]
    return Session(snapshot(nodes=nodes, jobs=jobs), conf("allocate", [list(t) for t in tiers]))


def test_predicate_blames_first_failure_and_caches_static():
    ssn = session()
    calls = {"static": 0, "dynamic": 0}

    def static_fn(task, table):
        calls["static"] += 1
        return [("node(s) were unschedulable", np.array([True, False, False])),
                ("node(s) had untolerated taint {gpu: true}", np.array([True, True, False]))]

    def dynamic_fn(task, table):
        calls["dynamic"] += 1
        return [("Too many pods", np.array([True, False, True]))]

    ssn.add_predicate_fn("predicates", static_fn, static=True)
    ssn.add_predicate_fn("nodeorder", dynamic_fn)
    a, b = task("a", node_selector={"x": "1"}), task("b", node_selector={"x": "1"})
    for t in (a, b):
        res = ssn.predicate(t)
        assert res.ok_mask.tolist() == [False, False, False]
        assert res.counts() == {"node(s) were unschedulable": 1,
                                "node(s) had untolerated taint {gpu: true}": 1, "Too many pods": 1}
    assert calls == {"static": 1, "dynamic": 2}
    with pytest.raises(ValueError):
        res.ok_mask[0] = True  # shared cached arrays are read-only


def test_predicate_rows_answers_as_the_whole_table_and_charges_the_same():
    # A static and a dynamic predicate over three nodes: each subset of rows (and each single
    # row) gets predicate(task).ok_mask's answer, with one charge per ask, as predicate's.
    def make():  # noqa: ANN202
        ssn = session()
        ssn.add_predicate_fn("predicates", lambda t, tb: [("unschedulable", np.array([True, False, False]))],
                             static=True)
        ssn.add_predicate_fn("nodeorder", lambda t, tb: [("Too many pods", np.array([False, False, True]))])
        return ssn

    whole, rows = make(), make()
    t = task("a")
    want = whole.predicate(t).ok_mask
    for idx in ([0, 1, 2], [2, 1], [1], []):
        got = rows.predicate_rows(t, np.array(idx, dtype=np.intp))
        assert got.tolist() == want[idx].tolist()
    assert [bool(rows.predicate_rows(t, r)) for r in range(3)] == want.tolist()
    for _ in range(6):  # as many asks as predicate_rows had (7, with `want`)
        whole.predicate(t)
    assert rows.work.total == whole.work.total == 7 * 3


def test_predicate_switch_off_and_all_static_cache():
    ssn = session(tiers=[[{"name": "predicates", "enablePredicate": False}, "nodeorder"]])
    ssn.add_predicate_fn("predicates", lambda t, tb: [("no", np.array([True, True, True]))], static=True)
    ssn.add_predicate_fn("nodeorder", lambda t, tb: [("odd", np.array([False, True, False]))], static=True)
    t = task("a")
    first = ssn.predicate(t)
    assert first.ok_mask.tolist() == [True, False, True]
    assert ssn.predicate(task("b")) is first  # same sched_key, all static: one cached answer


def test_node_scores_sum_and_ties_go_to_first_name():
    ssn = session()
    ssn.add_node_order_fn("nodeorder", lambda t, tb, m: np.array([1.0, 3.0, 3.0]))
    ssn.add_batch_node_order_fn("gang", lambda t, tb, m: np.array([2.5, 0.0, 0.0]))
    t = task("a")
    assert ssn.node_scores(t, tb_all(ssn)).tolist() == [3.5, 3.0, 3.0]
    assert ssn.best_node(t, tb_all(ssn)) == 0
    assert ssn.best_node(t, np.array([False, True, True])) == 1  # tie: n2 before n3
    assert ssn.best_node(t, np.array([False, False, False])) is None


def tb_all(ssn):
    return ssn.node_table.all_rows()


def test_total_resource_skips_unschedulable_nodes():
    ssn = session(nodes=[node("n1", cpu="4"), node("n2", cpu="8", unschedulable=True), node("n3", cpu="2")])
    assert ssn.total_resource.milli_cpu == 6000


def test_close_binds_only_ready_jobs_and_sets_phases():
    jobs = [
        job("ready", min_available=2, tasks=replicas("r", 2)),
        job("short", min_available=3, tasks=replicas("s", 3)),
        job("pipe", min_available=1, tasks=replicas("p", 1)),
        job("pending", phase="Pending", tasks=replicas("q", 1)),
        job("running", min_available=1, phase="Running", tasks=[task("u", status=S.RUNNING, node="n3")]),
        job("done", min_available=1, phase="Running", tasks=[task("d", status=S.SUCCEEDED)]),
        job("lost", min_available=2, phase="Running", tasks=[task("l0", status=S.RUNNING, node="n3"),
                                                              task("l1", status=S.FAILED)]),
    ]
    ssn = session(jobs=jobs)
    ssn.add_job_ready_fn("gang", lambda j: j.is_ready())
    r, s, p = ssn.jobs["ns/ready"].tasks, ssn.jobs["ns/short"].tasks, ssn.jobs["ns/pipe"].tasks
    ssn.allocate(r["ns/r-1"], "n2")
    ssn.allocate(r["ns/r-0"], "n1")
    ssn.allocate(s["ns/s-0"], "n1")
    ssn.pipeline(p["ns/p-0"], "n2")
    res = close_session(ssn)
    assert res.binds == {"ns/r-0": "n1", "ns/r-1": "n2"}
    assert list(res.binds) == ["ns/r-0", "ns/r-1"]  # sorted, deterministic
    assert res.pipelined == {"ns/p-0": "n2"}
    assert res.job_phase == {"ns/done": "Completed", "ns/lost": "Pending", "ns/pending": "Pending",
                             "ns/pipe": "Inqueue", "ns/ready": "Inqueue", "ns/running": "Running",
                             "ns/short": "Inqueue"}
    # newly bound tasks count from the next cycle on (shared scenario capacity-hierarchy-propagation)
    assert ssn.jobs["ns/ready"].phase is JobPhase.INQUEUE
    assert r["ns/r-0"].status is S.BINDING and s["ns/s-0"].status is S.ALLOCATED
    assert "session_s" in res.timing


def test_run_session_runs_actions_in_order_deterministically():
    order: list[str] = []

    class First(Action):
        name = "_t_first"

        def execute(self, ssn):
            order.append(f"first {self.arguments}")
            for t in sorted(ssn.jobs["ns/j"].pending_tasks(), key=lambda t: t.uid):
                row = ssn.best_node(t, ssn.node_table.fit_mask(t.resreq))
                ssn.allocate(t, ssn.node_table.names[row])

    class Second(Action):
        name = "_t_second"

        def execute(self, ssn):
            order.append("second")

    def make():
        return snapshot(nodes=[node("n2", cpu="2"), node("n1", cpu="2")],
                        jobs=[job("j", min_available=3, tasks=replicas("w", 3, cpu="1", memory="1Gi"))])

    with listed(First, Second):
        c = conf("_t_first, _t_second, allocate", [], _t_first={"k": "v"})
        first = run_session(make(), c)
        second = run_session(make(), c)
    assert order == ["first {'k': 'v'}", "second", "first {'k': 'v'}", "second"]
    assert first.binds == second.binds == {"ns/w-0": "n1", "ns/w-1": "n1", "ns/w-2": "n2"}
    assert first.job_phase == {"ns/j": "Inqueue"}


def test_node_scores_on_few_rows_use_a_view_with_the_same_answers():
    nodes = [node(f"n{i}", cpu=str(i + 1)) for i in range(8)]
    ssn = session(nodes=nodes)
    fixed = np.arange(8, dtype=float) * 100  # a plugin returning precomputed full-length scores
    seen: list[int] = []

    def by_idle(t, table, mask):
        seen.append(len(table))
        return table.idle[:, 0] / 1000 + np.array([table.index[n] for n in table.names])

    ssn.add_node_order_fn("nodeorder", by_idle)
    ssn.add_node_order_fn("predicates", lambda t, table, mask: fixed)
    t = task("a")
    full = ssn.node_scores(t, tb_all(ssn))
    one = np.zeros(8, dtype=bool)
    one[5] = True
    assert ssn.node_scores(t, one)[5] == full[5] - 5 == 506.0  # view row index is 0, not 5
    assert seen == [8, 1]
