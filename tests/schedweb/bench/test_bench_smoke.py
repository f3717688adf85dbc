"""One-cycle smoke of the PostgreSQL benchmark at size S: the data, the cycle, the floors (never timing)."""

from __future__ import annotations

from collections import Counter, defaultdict

import psycopg
import pytest

from scheduler_core.bench.generator import generate
from scheduler_core.bench.snapshot import conf_of, to_snapshot
from scheduler_core.scheduler import run_session

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_db_cycle_matches_the_in_memory_session(pg: psycopg.Connection) -> None:
    from schedweb.bench.db_bench import WriteCounter, raw_copy_floor, raw_read_floor, reset
    from schedweb.bench.dbdata import start_bound
    from schedweb.core.models import Job, Node, Task
    from schedweb.scheduling.cycle import active_conf, cycle_run

    spec = generate("S", "steady", seed=5)
    reset(pg, spec)
    # The configuration the cycle runs: the spec's when it has one, else the site's default.
    expected = run_session(to_snapshot(spec), active_conf()[1] if "config" not in spec else conf_of(spec))
    tasks = sum(len(j["tasks"]) for j in spec["jobs"])
    assert (Task.objects.count(), Job.objects.count()) == (tasks, len(spec["jobs"]))
    assert Node.objects.count() == 100
    pending = Task.objects.filter(status="Pending").count()
    with WriteCounter() as counter:
        run = cycle_run()
    assert not run.errors and not run.skipped
    bound = dict(Task.objects.filter(status="Binding").values_list("name", "node__name"))
    assert run.binds == len(bound) == len(expected.binds) > 0
    assert {f"{t}" for t in bound} == {uid.split("/", 1)[1] for uid in expected.binds}
    assert Task.objects.filter(status="Pending").count() == pending - run.binds - run.pipelined
    assert counter.rows >= run.binds  # every bind is a written row
    # Every node holds at most its allocatable, counting running and newly bound tasks.
    load: dict[str, Counter] = defaultdict(Counter)
    for node, request in Task.objects.filter(status__in=["Running", "Binding"]).values_list(
            "node__name", "request"):
        load[node].update(request)
        load[node]["pods"] += 1
    alloc = dict(Node.objects.values_list("name", "allocatable"))
    for node, used in load.items():
        assert all(v <= alloc[node].get(k, 0) for k, v in used.items()), node
    assert start_bound(pg) == run.binds
    read_s, rows = raw_read_floor(pg)
    assert read_s > 0 and rows >= Task.objects.count() - Task.objects.filter(job__phase="Completed").count()
    assert raw_copy_floor(pg, 100) > 0


def test_the_cycle_profile_names_the_phases(pg: psycopg.Connection) -> None:
    from schedweb.bench.db_bench import profile_case

    text = profile_case("S", "steady", conn=pg)
    # A steady cycle after the warm-up: the kept snapshot takes only the changes (no full load).
    for frame in ("cycle_run", "_apply_changes", "run_session", "_write_jobs"):
        assert frame in text, frame
