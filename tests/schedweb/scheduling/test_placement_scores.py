"""The cycle records the node scores of its placements (issue 17 rule 9; scheduling.placement_scores).

SCORING_CONF scores nodes with nodeorder (Volcano's default weights) and binpack (weight 2). On
three empty nodes, a task of 2 cpu / 4Gi scores, by the plugins' formulas:

    node  alloc        binpack (weight 2)              nodeorder                                total
    n0    8 cpu, 16Gi  (2/8 + 4/16) / 2 * 100 * 2 = 50  least 75 + balanced 100 + taints 300 = 475  525
    n1    4 cpu,  8Gi  (2/4 + 4/8)  / 2 * 100 * 2 = 100 least 50 + balanced 100 + taints 300 = 450  550
    n2    4 cpu, 16Gi  (2/4 + 4/16) / 2 * 100 * 2 = 75  least 62 + balanced  87 + taints 300 = 449  524

leastrequested: per dimension floor((alloc - used - req) * 100 / alloc), integer mean: n0
(75 + 75) // 2 = 75, n1 (50 + 50) // 2 = 50, n2 (50 + 75) // 2 = 62. balancedresource:
trunc((1 - |cpu fraction - memory fraction| / 2) * 100): n2 |0.5 - 0.25| / 2 = 0.125 -> 87, the
others 100. tainttoleration: no PreferNoSchedule taint anywhere -> 100 each, times weight 3.
So n1 is chosen (550), then n0 (525) and n2 (524); `simulate --json` on the same cluster gives
the same node_scores.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from schedweb.core import services
from schedweb.core.job_services import job_cancel, job_submit
from schedweb.core.models import Job, Task
from schedweb.scheduling import incremental, writes
from schedweb.scheduling.cycle import cycle_run, prune_history
from schedweb.scheduling.models import CycleRun, TaskPlacementScores
from schedweb.scheduling.placement_scores import score_text, unrecorded_note

from .conftest import SIMPLE_CONF, requires_postgres, statuses

pytestmark = [pytest.mark.django_db, requires_postgres]

# SIMPLE_CONF with the two node-order plugins: scores that tell the nodes apart.
SCORING_CONF = SIMPLE_CONF + """\
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 2
"""
NODES = {"n0": ("8", "16Gi"), "n1": ("4", "8Gi"), "n2": ("4", "16Gi")}


def score(node: str, binpack: float, nodeorder: float) -> dict:
    """A NodeScore's JSON as the cycle stores it."""
    return {"node": node, "total": binpack + nodeorder,
            "plugins": {"nodeorder": nodeorder, "binpack": binpack}, "pipelined": False}


N1, N0, N2 = score("n1", 100.0, 450.0), score("n0", 50.0, 475.0), score("n2", 75.0, 449.0)


def three_nodes(queue: str = "q") -> None:
    """n0, n1, n2 of NODES (110 pods each), one leaf queue, SCORING_CONF active."""
    services.queue_create(name=queue)
    for name, (cpu, memory) in NODES.items():
        services.node_create(name=name, allocatable={"cpu": cpu, "memory": memory, "pods": 110})
    services.scheduler_config_activate(yaml=SCORING_CONF)


def submit(name: str, tasks: int = 1, cpu: str = "2", memory: str = "4Gi", queue: str = "q") -> Job:
    """A gang of `tasks` identical tasks `<name>-<i>` in namespace "ns"."""
    return job_submit(namespace="ns", name=name, queue=queue, min_member=tasks,
                      tasks=[{"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": memory}}
                             for i in range(tasks)])


def records(job: Job | None = None) -> list[tuple]:
    """(job, task, node, pipelined, action, cycle) of every stored record, in task order."""
    qs = TaskPlacementScores.objects.all() if job is None else TaskPlacementScores.objects.filter(job=job)
    return list(qs.order_by("job__name", "task_name", "cycle_id").values_list(
        "job__name", "task_name", "node", "pipelined", "action", "cycle_id"))


def test_hand_computed_scores_of_a_placement():
    three_nodes()
    job = submit("solo")
    run = cycle_run()
    assert (run.binds, run.pending_tasks, run.scores_recorded) == (1, 1, True)
    assert statuses("solo") == {"solo-0": ("Binding", "n1")}
    row = TaskPlacementScores.objects.get()
    assert (row.cycle_id, row.job_id, row.task_name, row.node, row.pipelined, row.action) == \
        (run.pk, job.pk, "solo-0", "n1", False, "allocate")
    assert row.chosen_scores == N1
    assert row.top == [N1, N0, N2]  # SCHEDULER_RECORD_SCORES = 3 (the default)
    assert score_text(row.chosen_scores) == "binpack 100, nodeorder 450: total 550"
    assert score_text(row.top[2]) == "binpack 75, nodeorder 449: total 524"


def test_top_follows_the_setting(settings):
    settings.SCHEDULER_RECORD_SCORES = 1
    three_nodes()
    submit("solo")
    cycle_run()
    row = TaskPlacementScores.objects.get()
    assert (row.chosen_scores, row.top) == (N1, [N1])


def test_the_second_task_of_a_gang_sees_the_first(settings):
    # After solo-0 takes n1 (2 of 4 cpu, 4 of 8Gi used), its twin scores n1 at binpack
    # (4/4 + 8/8) / 2 * 200 = 200, nodeorder least 0 + balanced 100 + taints 300 = 400: total 600.
    three_nodes()
    submit("pair", tasks=2)
    cycle_run()
    rows = {r.task_name: r for r in TaskPlacementScores.objects.all()}
    assert {t: (r.node, r.chosen_scores["total"]) for t, r in rows.items()} == \
        {"pair-0": ("n1", 550.0), "pair-1": ("n1", 600.0)}
    assert rows["pair-1"].chosen_scores["plugins"] == {"nodeorder": 400.0, "binpack": 200.0}
    assert [e["node"] for e in rows["pair-1"].top] == ["n1", "n0", "n2"]


@pytest.mark.parametrize(("max_pending", "recorded", "rows"), [
    pytest.param(4, True, 4, id="at-the-cap"),
    pytest.param(3, False, 0, id="burst"),
])
def test_a_burst_records_nothing_and_says_so(settings, max_pending, recorded, rows):
    settings.SCHEDULER_RECORD_SCORES_MAX_PENDING = max_pending
    three_nodes()
    job = submit("wide", tasks=4, cpu="1", memory="1Gi")
    run = cycle_run()
    assert (run.binds, run.pending_tasks, run.scores_recorded) == (4, 4, recorded)
    assert TaskPlacementScores.objects.count() == rows
    expected = "" if recorded else (
        f"scores not recorded: a burst of 4 tasks was placed (cycle {run.pk}: 4 tasks were waiting, "
        "more than the 3 above which a cycle records no scores)")
    assert unrecorded_note(job) == expected


def test_recording_off(settings):
    settings.SCHEDULER_RECORD_SCORES = 0
    three_nodes()
    job = submit("solo")
    waiting = submit("huge", cpu="64")  # never placed: nothing to explain
    run = cycle_run()
    assert (run.binds, run.scores_recorded, TaskPlacementScores.objects.count()) == (1, False, 0)
    assert unrecorded_note(job) == (f"scores not recorded: recording was off in cycle {run.pk}, "
                                    "which placed it")
    assert unrecorded_note(waiting) == ""


def test_at_most_per_job_placements_a_cycle(settings):
    settings.SCHEDULER_RECORD_SCORES_PER_JOB = 2
    three_nodes()
    a, b = submit("a", tasks=4, cpu="500m", memory="1Gi"), submit("b", tasks=3, cpu="500m", memory="1Gi")
    run = cycle_run()
    assert run.binds == 7
    assert [(job, task, action, cycle) for job, task, _, _, action, cycle in records()] == [
        ("a", "a-0", "allocate", run.pk), ("a", "a-1", "allocate", run.pk),
        ("b", "b-0", "allocate", run.pk), ("b", "b-1", "allocate", run.pk)]
    assert {a.pk, b.pk} == set(TaskPlacementScores.objects.values_list("job_id", flat=True))


def test_a_pipelined_task_is_recorded_once_while_it_stays_nominated():
    # old-0 (4 cpu, 8Gi) fills n1 (total 600 there: binpack 200, nodeorder 400); old-1 ties on
    # n0 and n2 (550 each) and takes n0, the first by name. Once both are Releasing, a 5-cpu task
    # fits only n0's future room (n1 and n2 have 4 cpu): pipelined there, cycle after cycle.
    three_nodes()
    old = submit("old", tasks=2, cpu="4", memory="8Gi")
    cycle_run()
    assert statuses("old") == {"old-0": ("Binding", "n1"), "old-1": ("Binding", "n0")}
    Task.objects.filter(job=old).update(status="Running")
    job_cancel(job=old)  # both Releasing: their room is promised, not free
    new = submit("new", cpu="5", memory="8Gi")
    first = cycle_run()
    second = cycle_run()
    assert (first.pipelined, second.pipelined) == (1, 1)
    assert statuses("new") == {"new-0": ("Pipelined", "n0")}
    assert records(new) == [("new", "new-0", "n0", True, "allocate", first.pk)]
    row = TaskPlacementScores.objects.get(job=new)
    assert (row.chosen_scores["node"], row.chosen_scores["pipelined"]) == ("n0", True)


def test_a_dropped_bind_is_not_recorded(monkeypatch):
    three_nodes()
    submit("a")
    b = submit("b", cpu="1", memory="1Gi")
    update_tasks = writes.update_tasks
    b_task = Task.objects.get(job=b).pk

    def conflicting(changes, now):  # task b-0 changed under the cycle: its decision is dropped
        return update_tasks([c for c in changes if c.id != b_task], now)

    monkeypatch.setattr(writes, "update_tasks", conflicting)
    run = cycle_run()
    assert (run.binds, run.conflicts) == (1, 1)
    assert [r[:3] for r in records()] == [("a", "a-0", "n1")]


def _decisions(settings, top: int) -> tuple[dict, list[tuple], int]:
    """Two cycles of the mixed cluster with SCHEDULER_RECORD_SCORES = top, rolled back after:
    (task -> (status, node), per-cycle (binds, pipelined, evictions), records written)."""
    settings.SCHEDULER_RECORD_SCORES = top
    incremental.forget()  # a full load from the same rows each time
    sid = transaction.savepoint()
    runs = [cycle_run()]
    Task.objects.filter(status="Binding").update(status="Running")
    for i in range(3):
        submit(f"late-{i}", tasks=2, cpu="1", memory=f"{i + 1}Gi")
    runs.append(cycle_run())
    got = statuses(), [(r.binds, r.pipelined, r.evictions) for r in runs], TaskPlacementScores.objects.count()
    transaction.savepoint_rollback(sid)
    incremental.forget()
    return got


def test_recording_does_not_change_decisions(settings):
    three_nodes()
    services.node_create(name="n3", allocatable={"cpu": "6", "memory": "12Gi", "pods": 3})
    shapes = [("gang", 4, "1500m", "3Gi"), ("small", 3, "500m", "1Gi"), ("wide", 2, "3", "2Gi"),
              ("mem", 2, "1", "7Gi"), ("fat", 1, "5", "10Gi")]
    for name, tasks, cpu, memory in shapes:
        submit(name, tasks=tasks, cpu=cpu, memory=memory)
    off, on = _decisions(settings, 0), _decisions(settings, 3)
    assert off[0] == on[0]
    assert off[1] == on[1] and sum(b for b, _, _ in on[1]) >= 12  # most tasks placed: a real test
    assert (off[2], on[2]) == (0, sum(b + p for b, p, _ in on[1]))


def test_prune_removes_scores_with_their_cycles(settings):
    settings.SCHEDULER_HISTORY_DAYS = 1
    three_nodes()
    t0 = timezone.now()
    submit("old")
    old = cycle_run(now=t0 - timedelta(days=2))
    submit("recent", cpu="1", memory="1Gi")
    recent = cycle_run(now=t0)
    assert [r[5] for r in records()] == [old.pk, recent.pk]  # jobs "old", "recent"
    prune_history(t0)
    assert list(CycleRun.objects.values_list("id", flat=True)) == [recent.pk]
    assert [r[:2] for r in records()] == [("recent", "recent-0")]


def test_the_orm_insert_of_the_development_path(monkeypatch):
    three_nodes()
    job = submit("solo")
    run = cycle_run()
    TaskPlacementScores.objects.all().delete()
    monkeypatch.setattr(writes, "is_postgres", lambda: False)  # SQLite's bulk_create, on this database
    chosen = '{"node": "n1", "total": 550.0, "plugins": {}, "pipelined": false}'
    writes.insert_placement_scores([(run.pk, job.pk, "solo-0", "n1", False, "allocate", chosen, "[]")])
    row = TaskPlacementScores.objects.get()
    assert (row.task_name, row.chosen_scores, row.top) == (
        "solo-0", {"node": "n1", "total": 550.0, "plugins": {}, "pipelined": False}, [])


def test_the_database_cascades_a_raw_delete():
    # Migration 0008: a job or cycle deleted by raw SQL (as the benchmarks clear jobs) takes its
    # records along in PostgreSQL itself, not only through the ORM's cascade.
    three_nodes()
    submit("a")
    submit("b", cpu="1", memory="1Gi")
    run = cycle_run()
    a, b = Job.objects.get(name="a").pk, Job.objects.get(name="b").pk
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM core_task WHERE job_id = %s", [a])
        cursor.execute("DELETE FROM core_job WHERE id = %s", [a])
    assert [r[:2] for r in records()] == [("b", "b-0")]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM scheduling_queuesample WHERE cycle_id = %s", [run.pk])
        cursor.execute("DELETE FROM scheduling_cyclerun WHERE id = %s", [run.pk])
    assert TaskPlacementScores.objects.filter(job_id=b).count() == 0
