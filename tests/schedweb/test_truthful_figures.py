"""Finding 1 (issue 16): a waiting gang's reason quoted figures of its own discarded placements.

Every figure a reason quotes (message, details, queue chain), the job page's timeline and the
queue tree must be the cycle's committed figures: its QueueSample rows.
"""

from __future__ import annotations

import re

import pytest

from schedweb.core import services
from schedweb.core.models import Job
from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from schedweb.scheduling.models import JobReasonHistory, QueueSample
from schedweb.scheduling.reason_chain import fill
from tests.schedweb.test_truthful_support import output_map, page, text


def _cycle():
    run = cycle_run()
    assert not run.errors and not run.skipped
    return run


def _submit(name: str, tasks: int, cpu: str) -> Job:
    return services.job_submit(namespace="dev", name=name, queue="sandbox", min_member=tasks, tasks=[
        {"name": f"{name}-{i}", "request": {"cpu": cpu, "memory": "1Gi"}} for i in range(tasks)])


@pytest.mark.django_db
def test_a_waiting_gang_quotes_the_committed_figures_everywhere():
    load_demo()
    _cycle()
    # sandbox (and dev above it) may hold 32 cores and hold 8.5 (notebooks 2 + 4, ci-smoke 2 x 1,
    # lint-all 0.5): a gang of 12 x 2 cores needs 24, 23.5 are left. Allocate places 11 of its tasks
    # tentatively before the 12th is refused; those 22 cores must appear nowhere.
    _submit("gang-24", 12, "2")
    _cycle()
    # A 1-core job lands next cycle (9.5 held): the gang's reason keeps its code, its figures move.
    _submit("one-core", 1, "1")
    run = _cycle()
    job = Job.objects.get(namespace="dev", name="gang-24")
    assert job.reason_code == "QueueOverCapability"
    assert job.reason_message == ("queue sandbox resource quota insufficient: insufficient cpu "
                                  "(need 24, 22.5 left)")
    # The row names the chain's levels; its readers take the figures from the cycle's samples.
    assert [set(e) for e in job.reason_details["queue_chain"]] == [{"queue", "headroom_of"}] * 3
    details = fill(job.reason_details)
    refusal = (details["queue"], details["check"], details["limit_figure"])
    assert refusal == ("sandbox", "allocate", "real_capability")
    assert details["insufficient"] == {"cpu": {"need": 24.0, "left": 22.5}}
    samples = {s.queue: s for s in QueueSample.objects.filter(cycle=run)}
    sandbox = samples["sandbox"]
    assert (sandbox.allocated["cpu"], sandbox.real_capability["cpu"]) == (9500.0, 32000.0)
    # The chain: the same cycle's samples, level by level, headroom = real capability - allocated.
    chain = {e["queue"]: e for e in details["queue_chain"]}
    assert list(chain) == ["root", "dev", "sandbox"]
    for name, entry in chain.items():
        for figure in ("allocated", "deserved", "real_capability"):
            assert entry[figure] == output_map(getattr(samples[name], figure)), (name, figure)
    assert chain["sandbox"]["headroom"]["cpu"] == 22.5
    # The job page: its sentence, its chain row and its timeline's current entry say 22.5 left;
    # so does the current history span (it takes each cycle's figures while the code holds).
    html = page("/jobs/dev/gang-24/")
    assert ("Queue sandbox has too little room under its real capability: cpu needs 24 cores, "
            "22.5 cores left.") in text(html)
    row = re.search(r'<tr data-queue="sandbox" class="named">.*?</tr>', html, re.S).group(0)
    assert "9.5 / 32 cores" in row and "(22.5 cores left)" in row
    span = JobReasonHistory.objects.get(job=job, current=True)
    assert span.message == job.reason_message and span.details == job.reason_details
    timeline = text(html[html.index('id="timeline"'):])
    assert "need 24, 22.5 left" in timeline and "23.5" not in timeline
    # The queue tree and the queue page show the same cycle's figures.
    tree = page("/queues/")
    html_row = tree[tree.index('id="q-sandbox"'):]
    assert "9.5 / 32 cores" in html_row[:html_row.index("</summary>")]
    assert ">9.5 cores</td>" in page("/queues/sandbox/")


@pytest.mark.django_db
def test_every_waiting_job_on_the_demo_quotes_its_cycle_samples():
    load_demo()
    _cycle()
    run = _cycle()
    samples = {s.queue: s for s in QueueSample.objects.filter(cycle=run)}
    checked = 0
    for job in Job.objects.exclude(reason_code=""):
        details = fill(job.reason_details)
        for entry in details.get("queue_chain") or []:
            sample = samples[entry["queue"]]
            for figure in ("allocated", "deserved", "capability", "real_capability", "inqueue"):
                where = (job.name, entry["queue"], figure)
                assert entry[figure] == output_map(getattr(sample, figure)), where
            limit = output_map(getattr(sample, entry["headroom_of"]))
            allocated = output_map(sample.allocated)
            for dim, room in entry["headroom"].items():
                assert room == pytest.approx(max(limit[dim] - allocated.get(dim, 0.0), 0.0), abs=1e-3)
            checked += 1
        for dim, figure in (details.get("insufficient") or {}).items():
            sample = samples[details["queue"]]
            limit = output_map(getattr(sample, details["limit_figure"]))[dim]
            held = output_map(sample.allocated).get(dim, 0.0)
            assert figure["left"] == pytest.approx(max(limit - held, 0), abs=1e-3)
    assert checked >= 15  # 9 waiting jobs, 2-4 levels each
