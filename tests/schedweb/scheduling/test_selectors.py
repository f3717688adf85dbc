"""schedweb.scheduling.selectors.latest_samples: the newest cycle's figures, all or only some."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schedweb.scheduling.models import CycleRun, QueueSample
from schedweb.scheduling.selectors import SAMPLE_FIELDS, latest_samples

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 23, tzinfo=UTC)


def _cycle(started: datetime, share: float) -> None:
    run = CycleRun.objects.create(started=started)
    for queue in ("a", "b"):
        QueueSample.objects.create(cycle=run, queue=queue, created=started, share=share,
                                   deserved={"cpu": 1000.0}, explanation={"why": ["long text"] * 50})


def test_the_newest_cycle_with_every_field_by_default():
    _cycle(T0, 0.25)
    _cycle(T0 + timedelta(seconds=2), 0.5)
    got = latest_samples()
    assert sorted(got) == ["a", "b"]
    assert set(got["a"]) == set(SAMPLE_FIELDS)
    assert got["a"]["share"] == 0.5 and got["a"]["explanation"] == {"why": ["long text"] * 50}


def test_only_the_asked_fields_and_the_queue_name():
    _cycle(T0, 0.25)
    got = latest_samples(("deserved", "share"))
    assert got == {name: {"queue": name, "deserved": {"cpu": 1000.0}, "share": 0.25} for name in ("a", "b")}
