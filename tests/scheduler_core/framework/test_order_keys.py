"""The composite order keys (job_order_key / queue_order_key) give exactly the comparators' order.

Each plugin's own key_fn is checked against its comparator in test_companions.py; these pin how
the session composes them (tier order, then creation time and uid / name).
"""

from __future__ import annotations

import random
from functools import cmp_to_key

import pytest

from scheduler_core.framework.session import open_session
from scheduler_core.model import QueueInfo
from tests.scheduler_core.builders import conf, job, node, snapshot, task

JOB_TIERS = [
    [["priority", "gang"], ["drf", "proportion"]],
    [["sla", "gang"], ["drf"]],
    [[{"name": "sla", "arguments": {"sla-waiting-time": "1h"}}, "priority"], ["proportion"]],
    [["gang", "priority", "drf"]],
]


def _world(seed: int):
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpu="16", memory="64Gi") for i in range(4)]
    queues = [QueueInfo(name=f"q{i}", weight=rng.randint(1, 4), priority=rng.choice([0, 0, 5]),
                        created=float(rng.randint(0, 3))) for i in range(6)]
    jobs = []
    for i in range(40):
        n = rng.randint(1, 3)
        running = rng.randint(0, n)
        tasks = [task(f"j{i}-{k}", cpu=str(rng.randint(1, 3)), memory="1Gi",
                      status="Running" if k < running else "Pending",
                      node=f"n{rng.randint(0, 3)}" if k < running else None) for k in range(n)]
        sla = {"sla_waiting_time": float(rng.choice([60, 600]))} if rng.random() < 0.3 else {}
        jobs.append(job(f"j{i}", queue=f"q{rng.randint(0, 5)}", tasks=tasks, min_available=rng.randint(1, n),
                        priority=rng.choice([0, 10, 100]), created=float(rng.randint(0, 5)), **sla))
    return snapshot(nodes=nodes, queues=queues, jobs=jobs)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tiers", JOB_TIERS)
def test_job_and_queue_keys_sort_like_the_comparators(seed, tiers):
    ssn = open_session(_world(seed), conf("allocate", tiers))
    jobs = list(ssn.jobs.values())
    key = ssn.job_order_key()
    assert key is not None
    expected = [j.uid for j in sorted(jobs, key=cmp_to_key(ssn.job_compare))]
    assert [j.uid for j in sorted(jobs, key=key)] == expected
    queues = [q for q in ssn.queues.values() if q.name != "root"]
    qkey = ssn.queue_order_key()
    assert qkey is not None
    assert [q.name for q in sorted(queues, key=qkey)] == [
        q.name for q in sorted(queues, key=cmp_to_key(ssn.queue_compare))]


def test_a_plugin_without_a_key_disables_keys():
    ssn = open_session(_world(0), conf("allocate", [["priority", "gang"], ["capacity"]]))
    assert ssn.job_order_key() is not None
    assert ssn.queue_order_key() is None  # capacity's hierarchical order has no sort key
    ssn.add_job_order_fn("priority", lambda lhs, rhs: 0)  # re-registered without a key
    assert ssn.job_order_key() is None
