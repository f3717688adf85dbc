"""The kept snapshot out of the cyclic collector's walks: frozen at the end of each cycle, thawed
and collected at a full load or a failed cycle (PostgreSQL, committed transactions)."""

from __future__ import annotations

import gc
import weakref

import pytest

from schedweb.scheduling import incremental
from schedweb.scheduling.cycle import cycle_run

from .conftest import make_cluster, requires_postgres, submit

pytestmark = [requires_postgres, pytest.mark.django_db(transaction=True)]


class Node:
    """An object in a reference cycle (only the cyclic collector frees it)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def thawed():
    yield
    incremental.forget()  # nothing of this test stays frozen


def test_a_cycle_freezes_what_is_alive_and_a_full_load_collects_the_cycles_left():
    make_cluster(nodes=1)
    submit("a")
    cycle_run()
    assert gc.get_freeze_count() > 0
    snapshot = weakref.ref(incremental._cache.applier.state.snapshot)
    cyclic = Node()
    gone = weakref.ref(cyclic)
    cycle_run()  # incremental: the cycle left alive when the first one ended stays frozen
    del cyclic
    gc.collect()
    assert gone() is not None and snapshot() is not None  # frozen: the collector does not see it
    before = incremental.full_loads
    incremental._cache.last_run = -1  # as if another process ran a cycle: the next is a full load
    cycle_run()
    assert incremental.full_loads == before + 1
    assert gone() is None  # thawed and collected at the full load
    assert gc.get_freeze_count() > 0  # the new snapshot frozen in its turn


def test_a_failed_cycle_thaws():
    make_cluster(nodes=1)
    submit("a")
    cycle_run()
    assert gc.get_freeze_count() > 0
    incremental.forget()  # what cycle_run does when a cycle fails
    assert gc.get_freeze_count() == 0
