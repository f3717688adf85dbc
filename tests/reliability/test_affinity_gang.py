"""Issue 33 finding 1 replayed against real processes: an affinity-heavy gang over the API.

A plain submitter's gang with many preferred `podAffinity` and `podAntiAffinity` terms (the
probe's: 400 tasks, 50 + 50 terms of 20 values, one task entry with `replicas`) that can never
be complete waits while cycles run and a load of small jobs keeps arriving. Checked: every cycle
completes (none fails), the load's jobs keep starting, no 5xx and nothing lost, the gang waits
with a reason (never InvalidJob), the invariants hold. The cycle durations before and after
the gang arrived go to the soak report (quiet and loaded p99; the soak variant first runs the
same load without the gang: baseline p99; and each phase's p99); `make soak` compares them.
"""

from __future__ import annotations

import time

import pytest
import requests
from django.utils import timezone

from schedweb.core.models import Job, Task
from schedweb.scheduling.invariants import check_invariants
from schedweb.scheduling.models import CycleRun

from .conftest import assert_load_outcome, good_cycles_after, needs_services, start_stack, variants
from .load import cycle_cost, cycle_health, p99, run_load

pytestmark = needs_services


def affinity_gang_body(replicas: int, terms: int, values: int) -> dict:
    """The probe's body: one task entry of `replicas` tasks with `terms` + `terms` preferred terms."""
    def term(i: int) -> dict:
        expr = {"key": "app", "operator": "In", "values": [f"v{i}-{v}" for v in range(values)]}
        return {"weight": 1 + i % 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [expr]},
                                                          "topologyKey": "kubernetes.io/hostname"}}
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    affinity = {"podAffinity": {pref: [term(i) for i in range(terms)]},
                "podAntiAffinity": {pref: [term(i + terms) for i in range(terms)]}}
    return {"namespace": "heavy", "name": "affinity-gang", "queue": "q", "min_member": replicas,
            "tasks": [{"name": "w", "replicas": replicas, "request": {"cpu": "1", "memory": "1Gi"},
                       "labels": {"app": "v0-0"}, "affinity": affinity}]}


def _runs(since, until=None):
    runs = CycleRun.objects.filter(started__gt=since, skipped=False)
    return runs.filter(started__lte=until) if until is not None else runs


PHASES = ("load", "schedule", "write")


def _phases(prefix: str, since, until=None) -> dict[str, float]:
    """p99 of each phase of the cycles in the window (where a slower p99 comes from)."""
    rows = list(_runs(since, until).values_list(*(f"{name}_seconds" for name in PHASES)))
    return {f"{prefix}_{name}_p99_s": p99([r[i] for r in rows]) for i, name in enumerate(PHASES)}


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("replicas", "terms", "values", "seconds", "baseline"),
                         variants((60, 10, 5, 8, 0), (400, 50, 20, 90, 45)))
def test_affinity_heavy_gang_does_not_stall_the_cycles(replicas, terms, values, seconds, baseline, procs,
                                                       soak_report):
    token, _, server, url = start_stack(procs, threads=8, nodes=4, cpu="8")
    quiet_from = timezone.now()
    time.sleep(min(seconds, 20) / 2)  # quiet cycles to compare with
    base_from = timezone.now()
    if baseline:  # the same load without the gang: what the gang itself adds is loaded vs this
        stats = run_load(url, token, clients=4, seconds=baseline, namespace="base", queue="q", seed=11)
        assert_load_outcome(stats, "base", soak_report, server.log)
    arrived = timezone.now()
    response = requests.post(f"{url}/api/v1/jobs/", json=affinity_gang_body(replicas, terms, values),
                             headers={"Authorization": f"Token {token}"}, timeout=60)
    assert response.status_code == 201, response.text[:500]
    submitted = timezone.now()
    stats = run_load(url, token, clients=4, seconds=seconds, namespace="load", queue="q")
    assert_load_outcome(stats, "load", soak_report, server.log)
    soak_report.update(cycle_health(arrived))
    soak_report.update({**cycle_cost("quiet", quiet_from, base_from), **cycle_cost("loaded", arrived),
                        "gang_tasks": replicas, "gang_terms": 2 * terms,
                        "gang_submit_s": round((submitted - arrived).total_seconds(), 3),
                        **_phases("loaded", arrived)})
    if baseline:
        soak_report.update({**cycle_cost("baseline", base_from, arrived),
                            **_phases("baseline", base_from, arrived)})
    assert soak_report["cycles_failed"] == 0, soak_report
    assert good_cycles_after(arrived) > 0
    assert Task.objects.filter(job__namespace="load", started__gt=arrived).exists()  # others keep starting
    gang = Job.objects.get(namespace="heavy", name="affinity-gang")
    assert gang.reason_code not in ("", "InvalidJob"), (gang.reason_code, gang.reason_message)
    assert not Task.objects.filter(job=gang).exclude(status="Pending").exists()
    assert check_invariants() == []
