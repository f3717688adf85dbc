"""Entry points of the shard instances: beat entries per SCHEDULER_SHARDS (schedweb.celery), the
Celery task's shard argument and `run_scheduler --shard NAME --once`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from schedweb.celery import setup_beat
from schedweb.core.models import Job, NodeShard
from schedweb.scheduling.models import CycleRun
from schedweb.scheduling.tasks import scheduling_cycle

from .conftest import make_cluster, requires_postgres, statuses, submit


class Sender:
    """Records what setup_beat asks the Celery app for."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, tuple, str | None, float]] = []

    def signature(self, name: str, args: tuple = (), queue: str | None = None) -> tuple:
        return name, tuple(args), queue

    def add_periodic_task(self, period: float, sig: tuple, name: str, expires: float) -> None:
        self.entries.append((name, *sig[1:], expires))

    def cycles(self) -> list[tuple[str, tuple, str | None, float]]:
        """The scheduling cycles' entries (beat also sends the sharding controller's, whatever
        the shards: tests/schedweb/scheduling/test_shard_controller.py)."""
        return [entry for entry in self.entries if entry[0].startswith("scheduling-cycle")]


def test_beat_sends_one_cycle_per_shard_to_its_queue(settings):
    settings.SCHEDULE_PERIOD = 2
    settings.SCHEDULER_SHARDS = ["a", "b"]
    sender = Sender()
    setup_beat(sender)
    assert sender.cycles() == [("scheduling-cycle-a", ("a",), "scheduler-a", 2.0),
                               ("scheduling-cycle-b", ("b",), "scheduler-b", 2.0)]


def test_beat_without_shards_is_unchanged(settings):
    settings.SCHEDULE_PERIOD = 2
    settings.SCHEDULER_SHARDS = []
    sender = Sender()
    setup_beat(sender)
    assert sender.cycles() == [("scheduling-cycle", (), None, 2.0)]


def _two_shards() -> None:
    make_cluster(nodes=2, cpu="4")
    NodeShard.objects.create(name="a", scheduler_name="sched-a", mode="hard", nodes_desired=["n0"])
    NodeShard.objects.create(name="b", scheduler_name="sched-b", mode="hard", nodes_desired=["n1"])
    for shard in ("a", "b"):
        job = submit(f"j{shard}", tasks=1, cpu="1")
        Job.objects.filter(pk=job.pk).update(scheduler_name=f"sched-{shard}")


@requires_postgres
@pytest.mark.django_db(transaction=True)
def test_the_task_and_the_command_run_the_named_shard(settings):
    settings.SIMULATED_AGENT = False
    settings.DEMO_ARRIVALS = False
    _two_shards()
    out = scheduling_cycle("a")
    assert out["shard"] == "a" and out["binds"] == 1
    assert statuses() == {"ja-0": ("Binding", "n0"), "jb-0": ("Pending", None)}
    stdout = StringIO()
    call_command("run_scheduler", "--once", "--shard", "b", stdout=stdout)
    assert "'shard': 'b'" in stdout.getvalue()
    assert statuses()["jb-0"] == ("Binding", "n1")
    assert list(CycleRun.objects.order_by("id").values_list("shard", "binds")) == [("a", 1), ("b", 1)]
