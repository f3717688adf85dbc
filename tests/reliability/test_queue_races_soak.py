"""The probe's queue races replayed together, round after round, with the tree's invariants
checked after each round (issue 33 findings 4-6; the deterministic cases are
tests/schedweb/api/test_queue_races.py):

- two children raise their guarantees to 6 cpu under a parent of 10: exactly one is accepted;
- a leaf is deleted while a job is submitted into it: exactly one succeeds;
- a child is created under a leaf while a job is submitted into it: exactly one succeeds;

never a 5xx, and after each round: every unfinished job sits in a leaf queue, and the children's
guarantees and deserved add up within their parent's guarantee / deserved and capability.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.test import APIClient

from schedweb.core import services
from schedweb.core.models import TERMINAL_JOB_PHASES, Job, Queue
from schedweb.core.queue_limits import dims_of, sum_maps

from .conftest import needs_services, variants

pytestmark = needs_services


def tree_violations() -> list[str]:
    """Unfinished jobs outside leaf queues; children's sums above their parent's bounds."""
    rows = {q["id"]: q for q in Queue.objects.values("id", "name", "parent_id", "capability", "deserved",
                                                      "guarantee")}
    parents = {q["parent_id"] for q in rows.values() if q["parent_id"] is not None}
    out = [f"job {ns}/{name} in non-leaf queue {rows[qid]['name']}" for ns, name, qid in
           Job.objects.exclude(phase__in=TERMINAL_JOB_PHASES).filter(queue_id__in=parents)
           .values_list("namespace", "name", "queue_id")]
    for pid in sorted(parents):
        kids = [q for q in rows.values() if q["parent_id"] == pid]
        for figure in ("guarantee", "deserved"):
            total = sum_maps([k[figure] for k in kids])
            for bound in (figure, "capability"):
                limit = rows[pid][bound]
                over = [d for d in dims_of(total, limit) if total[d] > float(limit[d]) + 0.1]
                out += [f"queue {rows[pid]['name']}: children's {figure} {d} {total[d]} > {bound} {limit[d]}"
                        for d in over]
    return out


def _together(calls: dict[str, Callable[[], Any]]) -> dict[str, int]:
    """Run the calls at once (a barrier), each on its own connection; their status codes."""
    barrier = threading.Barrier(len(calls))
    codes: dict[str, int] = {}

    def run(name: str, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(30)
            codes[name] = call().status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=item) for item in calls.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return codes


def _job(queue: str, name: str) -> dict[str, Any]:
    return {"namespace": "race", "name": name, "queue": queue, "min_member": 1,
            "tasks": [{"name": f"{name}-0", "request": {"cpu": "1", "memory": "1Gi"}}]}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("rounds", variants(3, 40))
def test_queue_races_keep_the_tree_valid(rounds, soak_report):
    staff = get_user_model().objects.create_user("race-ops", is_staff=True)

    def client() -> APIClient:
        c = APIClient(raise_request_exception=False)
        c.force_authenticate(staff)
        return c

    outcomes: Counter[str] = Counter()
    for r in range(rounds):
        parent = services.queue_create(name=f"p{r}", capability={"cpu": "10"}, guarantee={"cpu": "10"})
        for kid in ("a", "b"):
            services.queue_create(name=f"p{r}-{kid}", parent=parent)
        services.queue_create(name=f"gone{r}")
        services.queue_create(name=f"split{r}")
        codes = _together({
            "guarantee-a": lambda r=r: client().patch(f"/api/v1/queues/p{r}-a/", {"guarantee": {"cpu": "6"}},
                                                      format="json"),
            "guarantee-b": lambda r=r: client().patch(f"/api/v1/queues/p{r}-b/", {"guarantee": {"cpu": "6"}},
                                                      format="json"),
            "delete": lambda r=r: client().delete(f"/api/v1/queues/gone{r}/"),
            "submit-deleted": lambda r=r: client().post("/api/v1/jobs/", _job(f"gone{r}", f"g{r}"),
                                                        format="json"),
            "child": lambda r=r: client().post("/api/v1/queues/", {"name": f"kid{r}", "parent": f"split{r}"},
                                               format="json"),
            "submit-split": lambda r=r: client().post("/api/v1/jobs/", _job(f"split{r}", f"s{r}"),
                                                      format="json"),
        })
        soak_report["requests"] += len(codes)
        assert len(codes) == 6, codes
        assert all(code < 500 for code in codes.values()), codes
        assert sorted([codes["guarantee-a"], codes["guarantee-b"]]) == [200, 400], codes
        assert [codes["delete"] == 204, codes["submit-deleted"] == 201].count(True) == 1, codes
        assert [codes["child"] == 201, codes["submit-split"] == 201].count(True) == 1, codes
        assert codes["submit-deleted"] in (201, 400, 409) and codes["submit-split"] in (201, 400, 409), codes
        outcomes.update(f"{name}:{code}" for name, code in codes.items())
        assert tree_violations() == [], codes
    soak_report["outcomes"] = dict(sorted(outcomes.items()))
