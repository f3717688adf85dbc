"""resourcequota: namespace quotas on enqueue, only quota dimensions the job asks for."""

from __future__ import annotations

import pytest

from scheduler_core.explain.reasons import ReasonCode
from scheduler_core.model import NamespaceInfo
from scheduler_core.plugins.resourcequota.resourcequota import hard_names
from tests.scheduler_core.builders import conf, job, node, res, run, snapshot, task

GPU = "nvidia.com/gpu"
CONF = conf("enqueue", [["resourcequota"]])


def ns(name="ns", quota=None, used=None):
    return NamespaceInfo(name=name, quota=None if quota is None else res(**quota),
                         used=res(**(used or {})))


def pending(name, min_resources, namespace="ns", created=0):
    return job(name, tasks=[task(f"{name}-t")], namespace=namespace, min_resources=min_resources,
               phase="Pending", created=created)


def test_hard_names():
    assert hard_names(res(cpu="1", gpu=0)) == ["cpu", "nvidia.com/gpu"]
    assert hard_names(res(memory="1Gi")) == ["memory"]


# (quota, used, min_resources of Pending jobs in order, expected phases)
CASES = [
    ({"cpu": "10"}, {"cpu": "6"}, [{"cpu": "4"}], ["Inqueue"]),           # exactly at the limit
    ({"cpu": "10"}, {"cpu": "6"}, [{"cpu": "5"}], ["Pending"]),
    ({"cpu": "10"}, {}, [{"cpu": "6"}, {"cpu": "6"}, {"cpu": "4"}], ["Inqueue", "Pending", "Inqueue"]),
    ({"cpu": "10"}, {"cpu": "9"}, [{"memory": "100Gi"}], ["Inqueue"]),    # memory has no quota
    ({"cpu": "10", "gpu": 0}, {}, [{"cpu": "1", GPU: 1}], ["Pending"]),  # gpu: 0 forbids GPUs
    (None, {}, [{"cpu": "1000"}], ["Inqueue"]),                            # no quota
]


@pytest.mark.parametrize("quota,used,mins,phases", CASES)
def test_enqueue_against_namespace_quota(quota, used, mins, phases):
    jobs = [pending(f"j{i}", m, created=i) for i, m in enumerate(mins)]
    snap = snapshot(nodes=[node("n1")], jobs=jobs, namespaces=[ns(quota=quota, used=used)])
    result = run(snap, CONF)
    assert [result.job_phase[f"ns/j{i}"] for i in range(len(mins))] == phases


def test_other_namespaces_and_best_effort_jobs_pass():
    jobs = [pending("free", {"cpu": "50"}, namespace="other"),
            job("be", tasks=[task("t", cpu="50")], phase="Pending")]
    snap = snapshot(nodes=[node("n1")], jobs=jobs, namespaces=[ns(quota={"cpu": "1"})])
    assert run(snap, CONF).job_phase == {"ns/be": "Inqueue", "other/free": "Inqueue"}


def test_rejection_message_lists_requested_used_limited():
    jobs = [pending("big", {"cpu": "4", "memory": "8Gi"})]
    quota = ns(quota={"cpu": "10", "memory": "64Gi"}, used={"cpu": "8", "memory": "1Gi"})
    snap = snapshot(nodes=[node("n1")], jobs=jobs, namespaces=[quota])
    reason = run(snap, CONF).reasons["ns/big"]
    assert reason.code is ReasonCode.NotEnqueued
    assert reason.message == ("namespace ns resource quota insufficient, requested: cpu 4, used: cpu 8, "
                              "limited: cpu 10")
    assert reason.details == {"namespace": "ns", "exceeded": ["cpu"]}
