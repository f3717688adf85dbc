"""The rolling re-read (schedweb.scheduling.reread): every row within SCHEDULER_REREAD_EVERY
cycles, a slice per cycle, so a write the change log never saw is repaired without a full load."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from schedweb.core.job_services import job_submit
from schedweb.core.models import Job, Task
from schedweb.scheduling import incremental, reread
from schedweb.scheduling.adapter import load_state
from schedweb.scheduling.cycle import active_conf, cycle_run

from .conftest import requires_postgres
from .snapshot_compare import differences, picture
from .test_incremental import _cluster, assert_incremental_equals_full


@given(top=st.integers(0, 10_000), n=st.integers(1, 150))
def test_the_slices_cover_every_id_once(top, n):
    bounds = [reread.slice_bounds(top, k, n) for k in range(n)]
    assert bounds[0][0] == 0 and bounds[-1][1] > 2**60  # from 0, the last one open above
    for (_, hi), (lo, _) in zip(bounds, bounds[1:], strict=False):
        assert hi == lo  # adjacent: no id in two slices, none in none
    assert all(hi - lo <= top // n + 1 for lo, hi in bounds[:-1])  # each about a 1/n share


def _hidden_writes() -> None:
    """Writes the change log does not see (its triggers off for this session): a node's labels, a
    job's gang minimum, a pending task's request."""
    task = Task.objects.filter(status="Pending").order_by("id").first()
    job = Job.objects.order_by("id").first()
    assert task is not None and job is not None
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute("""UPDATE core_node SET labels = '{"zone": "hidden"}' WHERE name = 'n0'""")
            cursor.execute("UPDATE core_job SET min_member = 1 WHERE id = %s", [job.id])
            cursor.execute("UPDATE core_task SET request = %s WHERE id = %s",
                           ['{"cpu": 3000, "memory": 2147483648}', task.id])
        finally:
            cursor.execute("SET session_replication_role = origin")


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_a_write_behind_the_log_is_repaired_within_the_period_without_a_full_load(settings, caplog):
    settings.SCHEDULER_FULL_RELOAD_EVERY = 0
    _cluster()
    for i in range(6):
        job_submit(namespace="ns", name=f"j{i}", queue="a", min_member=2,
                   tasks=[{"name": f"j{i}-{t}", "request": {"cpu": "4", "memory": "1Gi"}} for t in range(2)])
    cycle_run()
    cycle_run()
    settings.SCHEDULER_REREAD_EVERY = 1
    _load()  # applies the job rows the last cycle wrote from memory (no hash of them yet)
    _load()  # every row read: those rows too are now hashed as read back
    loads = incremental.full_loads
    _hidden_writes()
    settings.SCHEDULER_REREAD_EVERY = 0  # off: the kept snapshot keeps what the log never said
    now = timezone.now()
    with transaction.atomic():
        kept, full = incremental.load(now, active_conf()[0]), load_state(now)
        missed = differences(picture(kept), picture(full))
    assert len(missed) >= 3, missed  # the node, the job and the task all differ
    settings.SCHEDULER_REREAD_EVERY = 3
    caplog.clear()
    for _ in range(3):  # three loads: the three slices of every table
        _load()
    assert_incremental_equals_full()
    assert incremental.full_loads == loads  # repaired by the re-read, not by a full load
    warned = [r.getMessage() for r in caplog.records if "not named by the change log" in r.getMessage()]
    assert sum(int(m.split()[2]) for m in warned) == 3, warned  # each hidden row named once


def _load() -> None:
    with transaction.atomic():
        assert not incremental.load(timezone.now(), active_conf()[0]).full


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_an_unchanged_slice_is_read_not_applied(settings, caplog):
    settings.SCHEDULER_FULL_RELOAD_EVERY = 0
    settings.SCHEDULER_REREAD_EVERY = 1  # the whole of every table at each load
    _cluster()
    for i in range(4):
        job_submit(namespace="ns", name=f"j{i}", queue="b", min_member=1,
                   tasks=[{"name": f"j{i}-0", "request": {"cpu": "1", "memory": "1Gi"}}])
    cycle_run()
    cycle_run()
    cycle_run()  # its load re-reads every row, among them the job rows the cycle before wrote
    assert_incremental_equals_full()  # re-applies the job rows the last cycle wrote (not read back)
    assert_incremental_equals_full()
    # The cycle's own writes come back through the log: never reported as rows the log missed.
    assert not [r for r in caplog.records if "not named by the change log" in r.getMessage()]
    # Nothing changed since: every row read and found as applied (the full load's hashes and the
    # re-read's agree), nothing re-applied.
    assert incremental.stats()["nodes"] == incremental.stats()["jobs"] == incremental.stats()["tasks"] == 0
