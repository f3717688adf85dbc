"""Queue chains stored by reference (schedweb.scheduling.reason_chain): the figures a reader fills
in from a cycle's samples are the very ones the session rendered, and a job whose chain figures
alone moved keeps its row."""

from __future__ import annotations

import pytest

from scheduler_core.bench.generator import build_world
from scheduler_core.bench.snapshot import conf_of, to_snapshot
from scheduler_core.scheduler import run_session
from schedweb.core import services
from schedweb.core.models import Job
from schedweb.scheduling.adapter import figures_json
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from schedweb.scheduling.reason_chain import SampleFigures, _resource, by_reference, fill

FIGURES = ("deserved", "allocated", "capability", "real_capability", "inqueue")


def _as_samples(result) -> dict[str, SampleFigures]:
    """The session's queue figures as a cycle stores them (stored units, JSON) and reads them back."""
    return {name: SampleFigures(*(_resource(figures_json(getattr(fig, f))) for f in FIGURES))
            for name, fig in result.queues.items()}


@pytest.mark.parametrize("scenario", ["contention", "steady"])
def test_filled_chains_equal_the_sessions_own(scenario):
    # A generated S cluster (GPU nodes, four-level queues, capacity): every reason that quotes a
    # chain, reduced to names and filled from the samples, is the session's reason exactly.
    world = build_world("S", scenario, seed=3)
    result = run_session(to_snapshot(world.spec), conf_of(world.spec))
    figures, memo, checked = _as_samples(result), {}, 0
    for reason in result.reasons.values():
        details = reason.to_json()["details"]
        if not details.get("queue_chain"):
            continue
        stored = by_reference(details, memo)
        assert all(set(e) == {"queue", "headroom_of"} for e in stored["queue_chain"])
        assert {k: v for k, v in stored.items() if k != "queue_chain"} == \
            {k: v for k, v in details.items() if k != "queue_chain"}
        assert fill(stored, figures) == details
        checked += 1
    assert checked > 0


def test_by_reference_shares_one_list_per_chain_and_leaves_other_details():
    chain = [{"queue": "root", "allocated": {"cpu": 1.0}, "headroom_of": "deserved"}]
    memo: dict = {}
    a = by_reference({"queue_chain": chain, "check": "allocate"}, memo)
    b = by_reference({"queue_chain": chain, "check": "enqueue"}, memo)
    assert a["queue_chain"] is b["queue_chain"] == [{"queue": "root", "headroom_of": "deserved"}]
    plain = {"node_failures": {"Insufficient cpu": 3}}
    assert by_reference(plain, memo) is plain
    names = {"queue_chain": ["root", "q"]}  # not a rendered chain: kept as it is
    assert by_reference(names, memo) is names
    assert fill(names, {}) is names


def test_a_level_without_a_sample_keeps_its_name():
    stored = {"queue_chain": [{"queue": "gone", "headroom_of": "deserved"}]}
    assert fill(stored, {}) == stored


@pytest.mark.django_db
def test_moving_chain_figures_alone_rewrite_no_row():
    load_demo()
    cycle_run()
    # sandbox may hold 32 cores: a gang of 12 x 2 cores waits on its quota.
    services.job_submit(namespace="dev", name="gang-24", queue="sandbox", min_member=12, tasks=[
        {"name": f"g-{i}", "request": {"cpu": "2", "memory": "1Gi"}} for i in range(12)])
    cycle_run()
    gang = Job.objects.get(namespace="dev", name="gang-24")
    assert gang.reason_code == "QueueOverCapability"
    before = fill(gang.reason_details)
    # A small job in another queue under the same root moves root's figures, not the gang's reason.
    services.queue_create(name="spare")
    services.job_submit(namespace="dev", name="tiny", queue="spare", min_member=1,
                        tasks=[{"name": "t", "request": {"cpu": "100m", "memory": "64Mi"}}])
    cycle_run()
    after = Job.objects.get(pk=gang.pk)
    assert (after.reason_code, after.reason_message, after.updated) == \
        (gang.reason_code, gang.reason_message, gang.updated)
    root_before = next(e for e in before["queue_chain"] if e["queue"] == "root")
    root_after = next(e for e in fill(after.reason_details)["queue_chain"] if e["queue"] == "root")
    assert root_after["allocated"]["cpu"] == pytest.approx(root_before["allocated"]["cpu"] + 0.1)
