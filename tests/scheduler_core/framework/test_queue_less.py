"""`queue_less()` (the queue heaps' comparator in one closure) answers as `queue_order_fn` for
every pair, with no, one or two queue-order plugins, and follows a re-registration."""

from __future__ import annotations

import pytest

from scheduler_core.framework.session import open_session
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task


def _session(tiers):
    queues = [queue("a", deserved={"cpu": "2"}, created=1.0), queue("b", created=0.0),
              queue("c", deserved={"cpu": "4"}, priority=3, created=1.0), queue("d", created=1.0)]
    jobs = [job(f"j-{q.name}", q.name, [task(f"{q.name}-{k}", status="Running", node="n1")
                                        for k in range(i % 3)] + [task(f"{q.name}-p")])
            for i, q in enumerate(queues)]
    snap = snapshot(nodes=[node("n1", cpu="16")], queues=queues, jobs=jobs)
    return open_session(snap, conf("allocate", tiers))


@pytest.mark.parametrize("tiers", [
    [["gang"]],
    [["capacity"]],
    [[{"name": "capacity", "enableHierarchy": True}]],
    [["proportion"]],
    [["capacity"], ["proportion"]],
])
def test_queue_less_answers_as_queue_order_fn(tiers):
    ssn = _session(tiers)
    less = ssn.queue_less()
    queues = list(ssn.queues.values())
    answers = {(a.name, b.name): less(a, b) for a in queues for b in queues}
    assert answers == {(a.name, b.name): ssn.queue_order_fn(a, b) for a in queues for b in queues}
    assert any(answers.values())


def test_a_registration_after_the_first_ask_is_seen():
    ssn = _session([["gang"]])
    a, b = ssn.queues["a"], ssn.queues["b"]
    assert ssn.queue_less()(b, a)  # created 0.0 before 1.0
    ssn.add_queue_order_fn("gang", lambda left, right: -1 if left.name < right.name else 1)
    assert ssn.queue_less()(a, b) and ssn.queue_order_fn(a, b)
