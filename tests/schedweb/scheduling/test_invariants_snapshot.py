"""check_invariants() reads one snapshot: a cycle committing between its queries is not a partial cycle."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, connections

from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.invariants import check_invariants
from tests.schedweb.scheduling.conftest import make_cluster, submit

pytestmark = pytest.mark.django_db(transaction=True)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _cycle_elsewhere(now: datetime) -> None:
    """A whole cycle, committed by another connection (as the scheduler process does)."""
    def run() -> None:
        try:
            cycle_run(now=now)
        finally:
            connections.close_all()
    worker = threading.Thread(target=run)
    worker.start()
    worker.join()


def test_a_cycle_committing_between_the_checks_queries_is_not_a_partial_cycle():
    if connection.vendor != "postgresql":
        pytest.skip("the snapshot is PostgreSQL's REPEATABLE READ")
    make_cluster(nodes=1, cpu="8")
    submit("a", tasks=1)
    cycle_run(now=T0)
    submit("b", tasks=2)
    fired = []

    def commit_a_cycle_after_the_cycle_rows_are_read(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not fired and 'FROM "scheduling_cyclerun"' in sql and "ORDER BY" in sql:
            fired.append(sql)
            _cycle_elsewhere(T0 + timedelta(seconds=2))  # binds b-0 and b-1, records its CycleRun
        return result

    with connection.execute_wrapper(commit_a_cycle_after_the_cycle_rows_are_read):
        seen = check_invariants()
    assert fired and seen == []
    assert check_invariants() == []  # and the next check sees the new cycle whole
