"""The prerendered body's queue families (metrics_queues): the bytes the collector's families
write, each queue's lines kept until its sample changes, the committed samples kept in memory."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from schedweb.core import services
from schedweb.scheduling import metrics, metrics_body, metrics_queues
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.metrics import LAST_CYCLE_AGE, QUEUE_FIGURES, _queue_families, _queue_text
from schedweb.scheduling.metrics_text import exposition
from schedweb.scheduling.models import CycleRun, QueueSample

from .conftest import make_cluster, submit

GPU = "nvidia.com/gpu"
EMPTY = dict.fromkeys(QUEUE_FIGURES)


def row(queue: str, share: float = 0.25, weight: int = 2, overused: bool = False, **figures) -> tuple:
    values = {**EMPTY, **figures}
    return (queue, share, weight, overused, *(values[f] for f in QUEUE_FIGURES))


ROWS = [
    row("a", allocated={"cpu": 1500, "memory": 2**31, GPU: 2000}, request={"cpu": 0.5},
        capability={"cpu": 0, "memory": 4096, GPU: 0}, real_capability={"memory": 1}, guarantee={},
        inqueue={"cpu": 1}, elastic={"x/y": 3}, deserved={"cpu": 1e21}),
    row('we"ird\\q', share=1.0, weight=1, overused=True, allocated={}),
    row("c", share=0.0, weight=7, capability={GPU: 4}),
]
POD_GROUPS = {("a", "Running"): 3, ("c", "Pending"): 1, ("c", "Completed"): 2}
NAMES = ["a", "c", 'we"ird\\q', "zz"]


def collector_text(rows: list[tuple]) -> str:
    return exposition(_queue_families(rows, POD_GROUPS, NAMES)).decode()


def test_the_queue_text_is_the_collectors_exposition_byte_for_byte():
    assert _queue_text(ROWS, POD_GROUPS, NAMES) == collector_text(ROWS)
    assert _queue_text([], {}, []) == exposition(_queue_families([], {}, [])).decode()


def test_a_changed_sample_reaches_the_text_and_an_unchanged_queue_is_not_written_again():
    text = metrics_queues.QueueText(QUEUE_FIGURES, metrics.QUEUE_METRICS, metrics.UNITS, metrics.NOT_SCALARS,
                                    metrics.LIMIT, metrics.SET, metrics.ZERO)
    first = text.samples_text(ROWS)
    assert text.written == 3
    assert text.samples_text(ROWS) == first and text.written == 3  # nothing changed: nothing written
    changed = [ROWS[0], row('we"ird\\q', share=0.5, weight=1, overused=True, allocated={"cpu": 9}), ROWS[2]]
    again = text.samples_text(changed)
    assert text.written == 4  # only the changed queue
    assert 'volcano_queue_share{queue_name="we\\"ird\\\\q"} 0.5\n' in again["volcano_queue_share"]
    assert 'volcano_queue_allocated_milli_cpu{queue_name="we\\"ird\\\\q"} 9.0\n' in (
        again["volcano_queue_allocated_milli_cpu"])
    # The module's own cache gives the collector's bytes for the changed rows too.
    assert _queue_text(ROWS, POD_GROUPS, NAMES) == collector_text(ROWS)
    assert _queue_text(changed, POD_GROUPS, NAMES) == collector_text(changed)


def test_kept_rows_are_only_of_their_cycle_in_the_databases_order():
    kept = metrics_queues.KeptSamples()
    assert kept.rows_of(1) is None
    kept.keep(5, [row("b"), row("a-c"), row("ab")])
    assert [r[0] for r in kept.rows_of(5)] == ["a-c", "ab", "b"]
    asked = []

    def ignoring_dashes(names):  # as a database with a natural-language collation may order
        asked.append(names)
        return sorted(names, key=lambda n: n.replace("-", ""))

    other = metrics_queues.KeptSamples()
    other.keep(5, kept.rows)
    assert [r[0] for r in other.rows_of(5, ignoring_dashes)] == ["ab", "a-c", "b"]
    other.rows_of(5, ignoring_dashes)
    assert len(asked) == 1  # the same names: the order is not asked for again
    other.keep(6, [row("b"), row("a-c")])
    assert [r[0] for r in other.rows_of(6, ignoring_dashes)] == ["a-c", "b"] and len(asked) == 2
    assert kept.rows_of(6) is None


@pytest.mark.django_db
def test_the_name_order_is_the_sample_querys_order():
    names = ["b", "a-c", "ab", "Z", "é", "a.b", "root"]
    run = CycleRun.objects.create(started=timezone.now())
    QueueSample.objects.bulk_create([QueueSample(cycle=run, queue=n, created=run.started) for n in names])
    read = list(QueueSample.objects.filter(cycle=run).values_list("queue", flat=True))
    assert metrics._name_order(names) == read


@pytest.mark.django_db(transaction=True)
def test_the_render_after_a_committed_cycle_reads_no_sample_and_equals_the_collectors():
    services.queue_create(name="g", capability={"cpu": "6", GPU: "2"})
    make_cluster(nodes=2)
    submit("a", tasks=2)
    submit("big", cpu="16")
    submit("g1", queue="g")
    run = cycle_run()
    assert metrics_queues.KEPT.cycle_id == run.pk  # set on commit
    read = list(QueueSample.objects.filter(cycle_id=run.pk).values_list(
        "queue", "share", "weight", "overused", *QUEUE_FIGURES))
    assert metrics_queues.KEPT.rows_of(run.pk) == read and {"g", "q"} <= {r[0] for r in read}
    with CaptureQueriesContext(connection) as queries:
        body, _ = metrics_body.render()
    assert not [q for q in queries.captured_queries if "scheduling_queuesample" in q["sql"]]
    families, _ = metrics.collect_families(None)
    assert body == exposition(f for f in families if f.name != LAST_CYCLE_AGE).decode()
    # A cycle's samples differing from what was kept: the render reads the rows again.
    QueueSample.objects.filter(cycle_id=run.pk, queue="g").update(share=0.75)
    metrics_queues.KEPT.keep(run.pk - 1, metrics_queues.KEPT.rows)
    body, _ = metrics_body.render()
    assert 'volcano_queue_share{queue_name="g"} 0.75\n' in body


@pytest.mark.django_db
def test_a_rolled_back_cycle_keeps_no_samples():
    make_cluster(nodes=1)
    submit("a")
    before = metrics_queues.KEPT.cycle_id
    run = cycle_run()  # inside the test's transaction: never committed
    assert metrics_queues.KEPT.cycle_id == before != run.pk


@pytest.mark.django_db
def test_pod_groups_and_waiting_reasons_from_one_scan_are_the_two_group_bys():
    from django.db.models import Count

    from schedweb.core.job_services import job_cancel
    from schedweb.core.models import TERMINAL_JOB_PHASES, Job

    services.queue_create(name="g", capability={"cpu": "1"})
    make_cluster(nodes=1, cpu="2")
    for name in ("a", "b"):
        submit(name)
    submit("big", cpu="16")
    submit("over", queue="g", cpu="2")
    job_cancel(job=submit("gone"))
    cycle_run()
    found = metrics._read()
    by_name = Job.objects.values_list("queue__name", "phase").annotate(n=Count("id")).order_by()
    assert found.pod_groups == {(q, p): n for q, p, n in by_name}
    waiting = Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES).exclude(reason_code="")
    expected = list(waiting.values_list("reason_code").annotate(n=Count("id")).order_by("reason_code"))
    assert found.pending == expected and len(expected) >= 2


def test_a_part_is_written_again_for_a_zero_of_the_other_sign_or_a_copied_figure():
    text = metrics_queues.QueueText(QUEUE_FIGURES, metrics.QUEUE_METRICS, metrics.UNITS, metrics.NOT_SCALARS,
                                    metrics.LIMIT, metrics.SET, metrics.ZERO)

    def check(rows):  # each family's lines, as the collector's families write them
        got = text.samples_text(rows)
        expected = {f.name: exposition([f]).decode().split("\n", 2)[2] for f in _queue_families(rows, {}, [])
                    if not f.name.startswith("volcano_queue_pod_group_")}
        assert {k: v for k, v in got.items() if v} == {k: v for k, v in expected.items() if v}
        return got

    zero = [row("a", share=0.0, allocated={"cpu": 0.0}), row("b")]
    check(zero)
    signed = [row("a", share=-0.0, allocated={"cpu": -0.0}), zero[1]]  # equal values, other texts
    got = check(signed)
    assert 'volcano_queue_share{queue_name="a"} -0.0\n' in got["volcano_queue_share"]
    assert 'allocated_milli_cpu{queue_name="a"} -0.0\n' in got["volcano_queue_allocated_milli_cpu"]
    moved = [signed[0], row("b", weight=5), row("c")]  # a queue more: every column again
    assert _queue_text(moved, POD_GROUPS, NAMES) == collector_text(moved)
    assert _queue_text(signed, POD_GROUPS, NAMES) == collector_text(signed)


def test_pod_group_lines_move_with_their_count_only():
    text = metrics_queues.PodGroupText(metrics.POD_GROUP_PHASES)
    queues = [(1, "a"), (2, 'we"ird'), (3, "z")]
    counts = {(1, "Running"): 3, (2, "Pending"): 1, (3, "Completed"): 2, (3, "Cancelled"): 9}
    names = {pk: name for pk, name in queues}

    def expected():
        by_name = {(names[pk], phase): n for (pk, phase), n in counts.items()}
        families = _queue_families([], by_name, [name for _, name in queues])
        return {f.name: exposition([f]).decode().split("\n", 2)[2] for f in families
                if f.name.startswith("volcano_queue_pod_group_")}

    source = object()
    assert text.texts(source, queues, counts, set()) == expected()
    counts[(1, "Running")] = 4
    counts.pop((2, "Pending"))
    assert text.texts(source, queues, counts, {(1, "Running"), (2, "Pending")}) == expected()
    queues.append((4, "new"))
    names[4] = "new"
    counts[(4, "Inqueue")] = 1
    assert text.texts(source, queues, counts, set()) == expected()  # another queue list: all again
