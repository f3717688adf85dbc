"""Finding 2 (issue 16): "can never run" was never said. A 1000-cpu task (the biggest node has 96
cores), a 200-cpu task and a 20 x 8 GPU gang (48 GPUs in the cluster, research may hold 40) get
NeverFits with the right kind, over the API and on the page, in the first cycle after submission."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from schedweb.scheduling.cycle import cycle_run
from schedweb.scheduling.demo import load_demo
from tests.schedweb.test_truthful_support import GPU, GPU_POOL, page, staff, text

CASES = [
    # (name, queue, tasks, request, extra, kind, sentence)
    ("huge-task", "serving-batch", 1, {"cpu": "1000", "memory": "1Gi"}, {}, "TaskLargerThanAnyNode",
     # No selector or toleration: the 11 schedulable 32-core cpu nodes are all it may use.
     "This job can never run as submitted: one task needs 1,000 cores, the largest node it can use has "
     "32 cores."),
    ("big-task", "serving-batch", 1, {"cpu": "200", "memory": "1Gi"}, {}, "TaskLargerThanAnyNode",
     "This job can never run as submitted: one task needs 200 cores, the largest node it can use has "
     "32 cores."),
    ("gpu-gang", "nlp-train", 20, {"cpu": "8", "memory": "32Gi", GPU: 8}, GPU_POOL, "GangExceedsQueueLimit",
     "This job can never run as submitted: its 20 tasks, which must start together, need 160 GPUs, queue "
     "research can never have more than 40 GPUs (its capability)."),
    ("gpu-gang-prod", "serving-batch", 20, {"cpu": "8", "memory": "32Gi", GPU: 8}, GPU_POOL,
     "GangExceedsCluster",
     # production sets no GPU limit: the 6 GPU nodes' 48 GPUs are the bound.
     "This job can never run as submitted: its 20 tasks, which must start together, need 160 GPUs, the 6 "
     "nodes it can use have 48 GPUs in total."),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "queue", "tasks", "request_", "extra", "kind", "sentence"), CASES)
def test_never_fits_in_the_first_cycle_over_the_api_and_on_the_page(name, queue, tasks, request_, extra, kind,
                                                                     sentence):
    load_demo()
    assert not cycle_run().errors
    client = APIClient()
    client.force_authenticate(staff())
    body = {"namespace": "prod", "name": name, "queue": queue, "min_member": tasks,
            "tasks": [{"name": f"{name}-{i}", "request": request_, **extra} for i in range(tasks)]}
    created = client.post("/api/v1/jobs/", body, format="json")
    assert created.status_code == 201, created.content
    assert not cycle_run().errors
    job = client.get(f"/api/v1/jobs/{created.json()['id']}/").json()
    assert job["reason"]["code"] == "NeverFits"
    assert job["reason_details"]["kind"] == kind
    html = page(f"/jobs/prod/{name}/")
    assert f'data-kind="{kind}"' in html
    start = html.index(">", html.index('id="reason"')) + 1
    reason = text(html[start:html.index('<div class="grid two">')])
    assert reason.startswith("It can never run as submitted Can never run")
    assert sentence in reason
    listed = page("/jobs/pending/?reason=NeverFits")
    assert f'data-job="prod/{name}" class="never-fits" data-kind="{kind}"' in listed
