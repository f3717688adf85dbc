"""The probe's amplification shapes (issue 33) against a real server with cycles running: a small
batch asking for a huge number of tasks, a manifest dry run as big, dry runs in parallel, and
clients flooding one user's waiting jobs. Each is refused with the limit named, nothing is a 5xx,
every accepted job is stored, the waiting jobs stay within the limit (plus what racing requests
carry), the probe stays answered and every invariant holds after.

The soak variant measures what the flood costs the other tenants: a second user's ordinary load
(tests/reliability/load.py) runs in its own queue first alone (the `baseline` cycles), then on
through the whole attack (the `loaded` cycles); `make soak` compares the two p99s (issue 33: within
2x). The `quiet` cycles of the empty cluster before both are reported too."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connections
from django.utils import timezone

from schedweb.api.services import token_create
from schedweb.core import services
from schedweb.core.models import Job
from schedweb.scheduling.invariants import check_invariants

from .conftest import assert_load_outcome, make_cluster, needs_services, variants, wait_cycles_resume
from .load import LoadStats, cycle_cost, run_load

pytestmark = needs_services

FAST_LIMITS = {"MAX_TASKS_PER_REQUEST": "200", "MAX_TASKS_PER_DRY_RUN": "50",
               "MAX_PENDING_JOBS_PER_USER": "15"}
# The probe's shapes against the default bounds; a waiting-jobs limit this machine's clients reach.
SOAK_LIMITS = {"MAX_PENDING_JOBS_PER_USER": "150"}


def vcjob(name: str, replicas: int) -> str:
    return (f"---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n"
            f"metadata: {{name: {name}, namespace: amp}}\n"
            f"spec:\n  queue: q\n  minAvailable: 1\n  tasks:\n  - name: w\n    replicas: {replicas}\n"
            "    template:\n      spec:\n        containers:\n"
            "        - {name: c, image: x, resources: {requests: {cpu: 1}}}\n")


def job(name: str, replicas: int, cpu: str = "1") -> dict:
    return {"namespace": "amp", "name": name, "queue": "q", "min_member": 1,
            "tasks": [{"name": "w", "replicas": replicas, "request": {"cpu": cpu}}]}


def other_tenant() -> str:
    """A second user with a queue of its own (`v`): the tenant the flood must not hurt; its token."""
    services.queue_create(name="v")
    user = get_user_model().objects.create_user("other-tenant", password="pw", is_staff=True)
    return token_create(user=user, name="other-tenant")[1]


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("replicas", "env", "clients", "seconds", "baseline"),
                         variants((30, FAST_LIMITS, 4, 4, 0), (10_000, SOAK_LIMITS, 8, 40, 30)))
def test_amplification_is_bounded_and_nothing_is_lost(replicas, env, clients, seconds, baseline, procs,
                                                      soak_report):
    token = make_cluster(nodes=4, cpu="8")
    other = other_tenant() if baseline else ""
    procs.worker()
    server, url = procs.server(threads=8, **env)
    assert wait_cycles_resume(timeout=60)
    quiet_from = timezone.now()
    if baseline:  # the soak variant: the empty cluster's cycles, then the other tenant's alone
        time.sleep(10)
    base_from = timezone.now()
    if baseline:
        base = run_load(url, other, clients=2, seconds=baseline, namespace="alone", queue="v", seed=5)
        assert_load_outcome(base, "alone", soak_report, server.log)
    burst_from = timezone.now()
    # The other tenant keeps working through the whole attack (the cycles compared with baseline).
    during = LoadStats()
    ongoing = threading.Thread(target=run_load, args=(url, other),
                               kwargs={"clients": 2, "seconds": seconds + 15, "namespace": "during",
                                       "queue": "v", "seed": 6, "stats": during}, daemon=True)
    if baseline:
        ongoing.start()
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    api = f"{url}/api/v1"
    statuses: list[int] = []

    def post(path: str, **kwargs) -> requests.Response:
        response = session.post(api + path, timeout=120, **kwargs)
        statuses.append(response.status_code)
        return response

    # 10 jobs x `replicas`: each within MAX_TASKS_PER_JOB, the request far above its bound.
    batch = post("/jobs/batch/", json={"jobs": [job(f"b{i}", replicas) for i in range(10)]})
    assert batch.status_code == 400 and "MAX_TASKS_PER_REQUEST" in batch.json()["error"]["fields"]["jobs"][0]
    # The 5-job manifest dry run of the probe: refused before any pod is made.
    dry = post("/manifests/import/?dry_run=true", data="".join(vcjob(f"m{i}", replicas) for i in range(5)),
               headers={"Content-Type": "application/yaml"})
    assert dry.status_code == 400 and "MAX_TASKS_PER_DRY_RUN" in dry.json()["error"]["fields"]["documents"][0]
    # Eight dry runs at once by one user: answered or refused with 429 too_many_dry_runs, the probe answers.
    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda i: post("/manifests/import/?dry_run=true", data=vcjob(f"d{i}", 5),
                                            headers={"Content-Type": "application/yaml"}), range(8)))
        assert requests.get(f"{url}/healthz", timeout=10).status_code == 200
    assert {r.status_code for r in runs} <= {200, 429}
    assert all(r.json()["error"]["code"] == "too_many_dry_runs" for r in runs if r.status_code == 429)
    # Clients flooding one user's waiting jobs (too big to run: they stay Pending). Each client
    # has its own connection and, as a portal should, sends an Idempotency-Key and retries with it
    # when the connection drops (a keep-alive closed under it): an answer it never got is not lost.
    accepted: dict[str, int] = {}
    lock = threading.Lock()
    until = time.monotonic() + seconds

    def flood(index: int) -> None:
        own = requests.Session()
        own.headers["Authorization"] = f"Token {token}"
        n = 0
        while time.monotonic() < until:
            name = f"f{index}-{n}"
            n += 1
            for _ in range(5):
                try:
                    response = own.post(api + "/jobs/", json=job(name, 1, cpu="100"), timeout=120,
                                        headers={"Idempotency-Key": name})
                    break
                except requests.ConnectionError:
                    time.sleep(0.2)
            else:
                raise AssertionError(f"{name}: no answer in 5 tries")
            statuses.append(response.status_code)
            if response.status_code == 201:
                with lock:
                    accepted[name] = response.json()["id"]
            elif response.status_code == 429:
                assert response.json()["error"]["code"] == "too_many_pending_jobs"
                time.sleep(0.05)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(flood, range(clients)))
    if baseline:
        ongoing.join(timeout=seconds + 120)
        assert not ongoing.is_alive(), "the other tenant's load did not finish"
    connections.close_all()
    stored = dict(Job.objects.filter(namespace="amp").values_list("name", "id"))
    limit = int(env.get("MAX_PENDING_JOBS_PER_USER", "1000"))
    for key, value in {"requests": len(statuses), "submitted": len(accepted), "stored": len(stored),
                       "lost": len(set(accepted.items()) ^ set(stored.items())),
                       "errors": sum(code >= 500 for code in statuses)}.items():
        soak_report[key] += value  # the other tenant's loads add theirs
    soak_report.update(refused_429=statuses.count(429), bad_inputs=statuses.count(400))
    soak_report.update({**cycle_cost("quiet", quiet_from, base_from), **cycle_cost("loaded", burst_from)})
    if baseline:
        soak_report.update(cycle_cost("baseline", base_from, burst_from))
        assert_load_outcome(during, "during", soak_report, server.log)
    assert [code for code in statuses if code >= 500] == []
    assert stored == accepted  # nothing lost, nothing stored that was refused
    assert limit <= len(accepted) <= limit + clients  # the bound, plus what racing requests carried
    assert statuses.count(429) > 0
    assert check_invariants() == []
