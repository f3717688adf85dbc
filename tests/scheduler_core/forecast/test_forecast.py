"""scheduler_core.forecast: estimated start times from the real scheduler run forward.

The cluster of most cases (`_cluster`): two 4-CPU nodes, full at T. In qa, `ra` holds n1 with
two 2-CPU tasks ending at T+end_a; in qb, `rb` holds n2 with two ending at T+end_b. The gang
`g` (qa, 4 x 2 CPU, min 4, not yet admitted) needs both nodes whole, so it starts at the first
cycle at or after both ends (the overcommit factor 1.2 admits its 8 CPU only with 8 CPU idle).
"""

from __future__ import annotations

import pytest

from scheduler_core.forecast import Basis, Simulator, describe, forecast
from scheduler_core.forecast.types import JobForecast
from scheduler_core.framework.conf import DEFAULT_CONF
from scheduler_core.model import ClusterSnapshot, JobInfo, TaskStatus
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

T = 1_767_229_200.0  # 2026-01-01T01:00:00Z


def _running(name: str, node_name: str, end: float, *, declared: bool = True, cpu: str = "2") -> object:
    # Started 1000 s ago; with a declared duration it ends at T+end.
    return task(name, cpu=cpu, status="Running", node=node_name, started=T - 1000,
                duration=end + 1000 if declared else None)


def _gang(name: str = "g", queue_name: str = "qa", n: int = 4, cpu: str = "2", **kw: object) -> JobInfo:
    return job(name, queue=queue_name, min_available=n, phase="Pending", created=T - 30,
               min_resources={"cpu": str(n * int(cpu)), "memory": f"{n}Gi"},
               tasks=[task(f"{name}-{i}", cpu=cpu, duration=3600) for i in range(n)], **kw)


def _cluster(end_a: float = 600, end_b: float = 900, *, b_declared: bool = True,
             extra: tuple[JobInfo, ...] = ()) -> ClusterSnapshot:
    return snapshot(
        nodes=[node("n1", cpu="4", memory="16Gi"), node("n2", cpu="4", memory="16Gi")],
        queues=[queue("qa"), queue("qb")],
        jobs=[job("ra", queue="qa", min_available=2, phase="Running", created=T - 2000,
                  tasks=[_running("ra-0", "n1", end_a), _running("ra-1", "n1", end_a)]),
              job("rb", queue="qb", min_available=2, phase="Running", created=T - 1900,
                  tasks=[_running("rb-0", "n2", end_b, declared=b_declared),
                         _running("rb-1", "n2", end_b, declared=b_declared)]),
              _gang(), *extra],
        now=T)


@pytest.mark.parametrize(("period", "end_b", "start_in"), [
    pytest.param(2.0, 900, 900, id="on-the-grid"),
    pytest.param(60.0, 910, 960, id="rounded-up-to-the-period"),
    pytest.param(7.0, 900, 903, id="grid-of-7s"),
])
def test_gang_starts_when_the_last_blocker_ends(period: float, end_b: float, start_in: float) -> None:
    fc = forecast(_cluster(end_b=end_b), DEFAULT_CONF, now=T, period=period)
    assert fc.jobs == {"ns/g": JobForecast(T + start_in, Basis.DECLARED)}
    assert fc.stop == "answered"
    assert fc.until == T + start_in


def test_gang_forecast_cycles_and_input_untouched() -> None:
    snap = _cluster()
    fc = forecast(snap, DEFAULT_CONF)
    # Cycles at T (nothing free), T+600 (n1 free, 5.6 CPU < 8: not admitted), T+900 (binds).
    assert (fc.cycles, fc.skipped) == (3, 0)
    assert {t.uid: t.status for t in snap.jobs["ns/g"].tasks.values()} == {
        f"ns/g-{i}": TaskStatus.PENDING for i in range(4)}
    assert snap.nodes["n1"].idle.milli_cpu == 0 and snap.now == T


def test_job_bound_in_the_first_cycle_starts_now() -> None:
    snap = snapshot(nodes=[node("n1", cpu="4")], queues=[queue("qa")],
                    jobs=[_gang("now", n=2)], now=T)
    fc = forecast(snap, DEFAULT_CONF)
    assert fc.jobs == {"ns/now": JobForecast(T, Basis.DECLARED)}
    assert describe(fc.jobs["ns/now"], fc.now) == (
        "expected to start in the next scheduling cycle, if running jobs end as declared")


def test_blocked_behind_a_task_without_duration_is_unknown() -> None:
    fc = forecast(_cluster(b_declared=False), DEFAULT_CONF)
    assert fc.jobs == {"ns/g": JobForecast(None, Basis.UNKNOWN)}
    # ra ends at T+600 (a session there), then nothing else is known to end.
    assert (fc.stop, fc.cycles, fc.until) == ("quiet", 2, T + 600)


@pytest.mark.parametrize(("estimates", "expected"), [
    # rb started at T-1000: with qb's median of 1500 s it ends at T+500, before ra (T+600):
    # the gang starts at T+600, after an estimated end: history.
    pytest.param({"qb": 1500.0}, JobForecast(T + 600, Basis.HISTORY), id="history-before-declared"),
    pytest.param({"qb": 2200.0}, JobForecast(T + 1200, Basis.HISTORY), id="history-last"),
    pytest.param({"qa": 60.0}, JobForecast(None, Basis.UNKNOWN), id="estimate-of-another-queue"),
])
def test_history_estimates(estimates: dict[str, float], expected: JobForecast) -> None:
    fc = forecast(_cluster(b_declared=False), DEFAULT_CONF, runtime_estimates=estimates)
    assert fc.jobs == {"ns/g": expected}


def test_never_fits_is_never_and_others_still_answered() -> None:
    huge = job("huge", queue="qa", min_available=1, phase="Pending", created=T - 10,
               min_resources={"cpu": "16"}, tasks=[task("huge-0", cpu="16", duration=60)])
    fc = forecast(_cluster(extra=(huge,)), DEFAULT_CONF)
    assert fc.jobs == {"ns/g": JobForecast(T + 900, Basis.DECLARED),
                       "ns/huge": JobForecast(None, Basis.NEVER)}
    assert describe(fc.jobs["ns/huge"], T) == (
        "not expected to start: it cannot run on the cluster as it stands")


@pytest.mark.parametrize(("kwargs", "stop", "until"), [
    pytest.param({"horizon_s": 600}, "horizon", T + 600, id="horizon"),
    pytest.param({"horizon_s": 899}, "horizon", T + 898, id="horizon-between-cycles"),
    pytest.param({"max_steps": 2}, "max_steps", T + 600, id="step-budget"),
    pytest.param({"cpu_budget_s": 0.0}, "cpu_budget", T, id="cpu-budget-one-cycle"),
])
def test_stopped_before_the_start_is_beyond_horizon(kwargs: dict, stop: str, until: float) -> None:
    fc = forecast(_cluster(), DEFAULT_CONF, **kwargs)
    assert fc.jobs == {"ns/g": JobForecast(None, Basis.BEYOND_HORIZON)}
    assert (fc.stop, fc.until) == (stop, until)


def test_still_waiting_once_everything_ended_is_never() -> None:
    # `huge` (qb) never fits, but it asks for 16 CPU: proportion splits the 8 CPU 4 / 4 between qa
    # and qb, so once ra and rb have ended the gang is over qa's deserved (8 > 4) for good.
    huge = job("huge", queue="qb", min_available=1, phase="Pending", created=T - 10,
               min_resources={"cpu": "16"}, tasks=[task("huge-0", cpu="16", duration=60)])
    fc = forecast(_cluster(extra=(huge,)), DEFAULT_CONF)
    assert fc.jobs == {"ns/g": JobForecast(None, Basis.NEVER), "ns/huge": JobForecast(None, Basis.NEVER)}
    assert (fc.stop, fc.until) == ("quiet", T + 902)


def _inqueue_cluster() -> ClusterSnapshot:
    # A gang of 2 x 4 CPU (admitted) behind: n1 = a1 (2 CPU, ends 600) + a2 (2 CPU, ends 900),
    # n2 = b (4 CPU, ends 1200). At 600 no node has 4 CPU free: that instant needs no session.
    return snapshot(
        nodes=[node("n1", cpu="4", memory="16Gi"), node("n2", cpu="4", memory="16Gi")],
        queues=[queue("qa")],
        jobs=[job("a", queue="qa", phase="Running", created=T - 2000,
                  tasks=[_running("a1", "n1", 600), _running("a2", "n1", 900)]),
              job("b", queue="qa", phase="Running", created=T - 1900,
                  tasks=[_running("b0", "n2", 1200, cpu="4")]),
              job("w", queue="qa", min_available=2, phase="Inqueue", created=T - 10,
                  tasks=[task(f"w-{i}", cpu="4", duration=60) for i in range(2)])],
        now=T)


@pytest.mark.parametrize(("skip_idle", "cycles", "skipped"), [(True, 3, 1), (False, 4, 0)])
def test_idle_instants_are_skipped_without_changing_the_answer(skip_idle: bool, cycles: int,
                                                              skipped: int) -> None:
    fc = forecast(_inqueue_cluster(), DEFAULT_CONF, skip_idle=skip_idle)
    assert fc.jobs == {"ns/w": JobForecast(T + 1200, Basis.DECLARED)}
    assert (fc.cycles, fc.skipped) == (cycles, skipped)


def test_deterministic() -> None:
    huge = job("huge", queue="qb", phase="Pending", created=T - 10, tasks=[task("huge-0", cpu="16")])
    first = forecast(_cluster(extra=(huge,)), DEFAULT_CONF, runtime_estimates={"qb": 700.0})
    again = forecast(_cluster(extra=(huge,)), DEFAULT_CONF, runtime_estimates={"qb": 700.0})
    assert first.to_json() == again.to_json()
    untimed = {"elapsed_s": 0, "cpu_s": 0}
    assert first.stats_json() | untimed == again.stats_json() | untimed


# -- preemption: evicted tasks release after the grace, then come back Pending -----------------------
PREEMPT = conf("enqueue, allocate, preempt", [["priority", "gang"], ["predicates"]])


def _preempt_cluster() -> ClusterSnapshot:
    low = job("low", queue="qa", priority=1, created=1.0, phase="Running",
              tasks=[_running(f"l-{i}", "n1", 3600) for i in range(2)])
    high = job("high", queue="qa", priority=100, created=2.0, tasks=[task("h-0", cpu="2", duration=60)])
    return snapshot(nodes=[node("n1", cpu="4")], queues=[queue("qa")], jobs=[low, high], now=T)


@pytest.mark.parametrize(("grace", "start_in", "cycles"), [(None, 2, 2), (10.0, 10, 6), (3.0, 4, 3)])
def test_preemptor_starts_once_its_victim_is_released(grace: float | None, start_in: float,
                                                      cycles: int) -> None:
    fc = forecast(_preempt_cluster(), PREEMPT, release_grace_s=grace)
    assert fc.jobs == {"ns/high": JobForecast(T + start_in, Basis.DECLARED)}
    assert fc.cycles == cycles


def test_simulator_states_between_cycles() -> None:
    sim = Simulator(_preempt_cluster())
    statuses = []
    for k in range(3):
        (result,), changed = sim.run_cycle(k, PREEMPT)
        statuses.append((changed, sorted(result.binds), {u: t.status.value for u, t in sim.tasks.items()}))
    assert statuses == [
        # cycle 0: l-1 evicted (Releasing, still on n1), h-0 pipelined there, then Pending again
        (True, [], {"ns/l-0": "Running", "ns/l-1": "Releasing", "ns/h-0": "Pending"}),
        # cycle 1: l-1 released (Pending, its job is alive), h-0 binds and runs from T+2
        (True, ["ns/h-0"], {"ns/l-0": "Running", "ns/l-1": "Pending", "ns/h-0": "Running"}),
        # cycle 2: the low job is Running again (phase change only), nothing else fits
        (True, [], {"ns/l-0": "Running", "ns/l-1": "Pending", "ns/h-0": "Running"}),
    ]
    assert sim.tasks["ns/h-0"].started == T + 2
    assert sim.tasks["ns/h-0"].nominated_node == "n1"
    assert sim.snap.nodes["n1"].idle.milli_cpu == 0
    assert sim.next_event() == 31  # h-0 ends 60 s after T+2: the cycle at T+62


@pytest.mark.parametrize(("basis", "start", "text"), [
    (Basis.DECLARED, T + 25 * 60, "expected to start in about 25 min, if running jobs end as declared"),
    (Basis.DECLARED, T + 30, "expected to start in under a minute, if running jobs end as declared"),
    (Basis.HISTORY, T + 3 * 3600,
     "expected to start in about 3 h, if running jobs take as long as recent jobs of their queues"),
    (Basis.DECLARED, T + 3 * 86400, "expected to start in about 3 days, if running jobs end as declared"),
    (Basis.UNKNOWN, None, "start time unknown: it waits for running jobs that declared no duration"),
    (Basis.BEYOND_HORIZON, None, "not expected to start within 24 h"),
])
def test_describe(basis: Basis, start: float | None, text: str) -> None:
    assert describe(JobForecast(start, basis), T, T + 86400) == text


def _state(snap: ClusterSnapshot) -> tuple:
    nodes = {n.name: (n.idle.to_canonical(), n.used.to_canonical(), n.pipelined.to_canonical(),
                      sorted(n.tasks)) for n in snap.nodes.values()}
    jobs = {j.uid: (j.phase, j.allocated.to_canonical(),
                    {t.uid: (t.status, t.node_name, t.started) for t in j.tasks.values()})
            for j in snap.jobs.values()}
    return nodes, jobs, sorted(snap.queues), snap.now


def test_clone_is_equal_and_independent() -> None:
    from scheduler_core.forecast import clone_snapshot
    from scheduler_core.scheduler import run_session

    snap = _preempt_cluster()
    copy = clone_snapshot(snap)
    assert _state(copy) == _state(snap)
    before = _state(snap)
    result = run_session(copy, PREEMPT)  # evicts l-1 and pipelines h-0 in the copy only
    assert (result.evictions, result.pipelined) == (["ns/l-1"], {"ns/h-0": "n1"})
    assert _state(snap) == before != _state(copy)
    low = list(copy.jobs["ns/low"].tasks.values())
    assert low[0].labels is low[1].labels and low[0].tolerations is low[1].tolerations
    assert low[0].resreq is not snap.jobs["ns/low"].tasks["ns/l-0"].resreq
