"""Queue samples sent as COPY text kept per queue: the rows stored are the driver's rows, field for
field, whatever the values, and a kept line is the line a fresh process would write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from schedweb.scheduling import sample_copy, writes
from schedweb.scheduling.models import CycleRun, QueueSample
from schedweb.scheduling.sample_copy import SAMPLE_COLUMNS, Sample

from .conftest import requires_postgres

pytestmark = [pytest.mark.django_db, requires_postgres]
T0 = datetime(2026, 3, 1, 12, 0, 0, 123_456, tzinfo=UTC)
TEXT = ("queue", "created", "deserved", "allocated", "request", "inqueue", "elastic", "capability",
        "real_capability", "guarantee", "share", "weight", "overused", "explanation")
ODD = "tab\there, new\nline, cr\r, back\\slash, bell\b, vt\v, ff\f, ünïcode \"quoted\" ✓"


@pytest.fixture(autouse=True)
def _fresh_texts():
    sample_copy.forget()
    yield
    sample_copy.forget()


def _samples(cycle_id: int, created: datetime) -> list[Sample]:
    return [
        Sample(cycle_id, "plain", created, deserved={"cpu": 1000.0, "memory": 2.0**30}, share=0.5, weight=2),
        Sample(cycle_id, ODD, created, allocated={"cpu": 0.1, "memory": 1e-300, "nvidia.com/gpu": 2000.0},
               request={"cpu": 1e21}, inqueue={}, elastic={"x/y": 3}, capability={"cpu": 4000},
               real_capability={"cpu": -0.0}, guarantee={"memory": 0.0}, share=-0.0, weight=0, overused=True,
               explanation={"note": ODD, "steps": [{"k": [1, 2.5, None, True, "\\"]}], ODD: {"n": -1}}),
        Sample(cycle_id, "limits", created, share=float("inf"), weight=2**31 - 1,
               explanation={"plugin": "capacity", "nested": {"a": {"b": {"c": []}}}}),
        Sample(cycle_id, "tiny", created, share=5e-324, weight=1),
    ]


def _stored(cycle_id: int) -> list[tuple]:
    """The cycle's rows as the database's text of each column (by queue)."""
    columns = ", ".join(f"{c}::text" for c in TEXT)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {QueueSample._meta.db_table} WHERE cycle_id = %s "
                       "ORDER BY queue", [cycle_id])
        return cursor.fetchall()


def _driver_rows(samples: list[Sample]) -> None:
    """What the writer sent before: the driver formats every column of every row."""
    with connection.cursor() as cursor, cursor.copy(
            f"COPY {QueueSample._meta.db_table} ({', '.join(SAMPLE_COLUMNS)}) FROM STDIN") as copy:
        for sample in samples:
            copy.write_row([json.dumps(v) if name in sample_copy.JSON_COLUMNS and v is not None else v
                            for name, v in sample.fields().items()])


def test_the_copy_text_stores_what_the_driver_stores_field_for_field():
    ours, theirs = CycleRun.objects.create(started=T0), CycleRun.objects.create(started=T0)
    stored = writes.insert_samples(_samples(ours.id, T0), None)
    _driver_rows(_samples(theirs.id, T0))
    assert _stored(ours.id) == _stored(theirs.id)
    assert len(_stored(ours.id)) == 4
    # What the writer returns is what the database gives back, decoded.
    by_queue = {r["queue"]: r for r in QueueSample.objects.filter(cycle=ours).values()}
    assert stored == [{name: by_queue[s.queue][name] for name in sample_copy.JSON_COLUMNS}
                      for s in _samples(ours.id, T0)]


def test_a_kept_line_is_the_line_a_fresh_process_writes():
    first = CycleRun.objects.create(started=T0)
    writes.insert_samples(_samples(first.id, T0), None)
    # The next cycle: one queue's figure moves, one's explanation changes in place, one's weight
    # and share; "plain" holds (its line is reused).
    t1 = T0 + timedelta(seconds=5)
    second = CycleRun.objects.create(started=t1)
    samples = _samples(second.id, t1)
    samples[1].explanation["steps"][0]["k"].append("more")
    samples[2].weight, samples[2].share = 3, 0.25
    samples[3].allocated = {"cpu": 1.0}
    writes.insert_samples(samples, first.id)
    sample_copy.forget()  # a fresh process: every line written anew
    again = CycleRun.objects.create(started=t1)
    writes.insert_samples([Sample(**{**s.fields(), "cycle_id": again.id}) for s in samples], None)
    assert _stored(second.id) == _stored(again.id)
    assert sorted(r[0] for r in _stored(second.id)) == sorted(["limits", "plain", "tiny", ODD])
    rows = {r["queue"]: r for r in QueueSample.objects.filter(cycle=second).values()}
    assert rows[ODD]["explanation"]["steps"][0]["k"] == [1, 2.5, None, True, "\\", "more"]
    assert (rows["limits"]["weight"], rows["limits"]["share"]) == (3, 0.25)
    assert rows["tiny"]["allocated"] == {"cpu": 1.0}
    # Only the newest cycle keeps explanations.
    assert not QueueSample.objects.filter(cycle=first, explanation__isnull=False).exists()


def test_a_value_equal_to_the_last_one_reuses_its_text_and_a_caller_change_in_place_does_not_leak():
    first = CycleRun.objects.create(started=T0)
    figures = {"cpu": 1000.0}
    writes.insert_samples([Sample(first.id, "q", T0, deserved=figures)], None)
    figures["cpu"] = 5.0  # the caller's object, changed after the write: the kept copy is the text's
    second = CycleRun.objects.create(started=T0)
    stored = writes.insert_samples([Sample(second.id, "q", T0, deserved={"cpu": 5.0})], first.id)
    assert stored[0]["deserved"] == {"cpu": 5.0}
    assert dict(QueueSample.objects.values_list("cycle_id", "deserved")) == {
        first.id: {"cpu": 1000.0}, second.id: {"cpu": 5.0}}


def test_copy_fields_escape_as_the_driver_does():
    assert sample_copy.copy_field(None) == "\\N"
    assert sample_copy.copy_field("plain") == "plain"
    assert sample_copy.copy_field("a\tb\nc\\d\re\bf\vg\fh") == "a\\tb\\nc\\\\d\\re\\bf\\vg\\fh"
