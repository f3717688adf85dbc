"""capacity's static queue key (plugins/capacity/order.py) against its comparator, on random trees.

Shares come from a few running tasks over small deserved figures, so ties (equal shares, best-
effort queues) are frequent: the key must either order every pair exactly as the comparator
then the fallback, or decline; and an enqueue heap keyed by it pops queues in the comparator
heap's order, pushes and pops interleaved as enqueue does.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.util.ordering import KeyedQueue, PriorityQueue
from scheduler_core.framework.session import Session, open_session
from scheduler_core.plugins.capacity.order import static_key
from tests.conftest import profiled
from tests.scheduler_core.builders import conf, job, node, queue, snapshot, task

# (parent pick, deserved cpu or None, priority, created, running tasks)
queue_st = st.tuples(st.integers(0, 100), st.sampled_from([None, 2, 4]), st.sampled_from([0, 0, 5]),
                     st.sampled_from([0.0, 1.0]), st.integers(0, 2))


def _session(spec: list[tuple], hierarchy: bool) -> Session:
    queues, jobs = [], []
    for i, (pick, deserved, priority, created, _) in enumerate(spec):
        parent = "root" if i == 0 or pick % (i + 1) == i else f"q{pick % i}"
        queues.append(queue(f"q{i}", parent if hierarchy else None, priority=priority, created=created,
                            deserved={"cpu": str(deserved), "memory": "100Gi"} if deserved else None))
    parents = {q.parent for q in queues}
    for q in queues:
        if hierarchy and q.name in parents:
            continue
        n = spec[int(q.name[1:])][4]
        tasks = [task(f"{q.name}-r{k}", cpu="1", memory="1Gi", status="Running", node="n1") for k in range(n)]
        tasks.append(task(f"{q.name}-p", cpu="1", memory="1Gi"))
        jobs.append(job(f"j-{q.name}", q.name, tasks, phase="Pending", min_resources={"cpu": "1"}))
    snap = snapshot(nodes=[node("n1", cpu="64", memory="256Gi")], queues=queues, jobs=jobs)
    return open_session(snap, conf("enqueue", [[{"name": "capacity", "enableHierarchy": hierarchy}]]))


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


@settings(profiled(settings(max_examples=150, deadline=None)))
@given(st.lists(queue_st, min_size=1, max_size=12), st.booleans(), st.lists(st.integers(0, 11), max_size=30))
def test_the_static_key_orders_as_the_comparator_or_declines(spec, hierarchy, pops):
    ssn = _session(spec, hierarchy)
    cp = ssn.plugins["capacity"]
    holding = [ssn.queues[j.queue] for j in ssn.jobs.values()]
    key = static_key(cp.queue_opts, hierarchy, holding)
    if not hierarchy:
        assert key is not None  # flat: priority, share, deserved first is a total order
    if key is None:
        return
    for a in holding:
        for b in holding:
            fa, fb = (a.created, a.name), (b.created, b.name)
            expected = _sign(cp.queue_order(a, b)) or (fa > fb) - (fa < fb)
            ka, kb = (*key(a), *fa), (*key(b), *fb)
            assert (ka > kb) - (ka < kb) == expected, (a.name, b.name, ka, kb)
    # The two heaps, filled in the same order and popped and pushed back alike, agree.
    less = ssn.queue_less()
    cmp_heap, key_heap = PriorityQueue(less), KeyedQueue(ssn.queue_order_static_key(holding))
    for q in holding:
        cmp_heap.push(q)
        key_heap.push(q)
    for p in pops:
        a, b = cmp_heap.pop(), key_heap.pop()
        assert a is b
        if p % 3:
            cmp_heap.push(a)
            key_heap.push(b)
        if not cmp_heap:
            break
    assert [q.name for q in _drain(cmp_heap)] == [q.name for q in _drain(key_heap)]


def _drain(heap):
    out = []
    while heap:
        out.append(heap.pop())
    return out


def test_a_harmful_tie_declines_and_harmless_ones_give_a_key():
    # Siblings a and b tie (both best-effort: share 1) while a's children differ: the comparator
    # is not transitive there (a1 < a2 by share, a2 ~ b and b ~ a1 by name), so no key.
    queues = [queue("a"), queue("b"), queue("a1", "a", deserved={"cpu": "2"}), queue("a2", "a"),
              queue("a0", "b")]
    jobs = [job("j1", "a1", [task("t1")], phase="Pending"), job("j2", "a2", [task("t2")], phase="Pending"),
            job("j0", "a0", [task("t0")], phase="Pending")]
    ssn = open_session(snapshot(nodes=[node("n1")], queues=queues, jobs=jobs),
                       conf("enqueue", [[{"name": "capacity", "enableHierarchy": True}]]))
    cp = ssn.plugins["capacity"]
    holding = [ssn.queues[n] for n in ("a1", "a2", "a0")]
    assert static_key(cp.queue_opts, True, holding) is None
    # Without a1's deserved every queue ties all the way down: the fallback orders all of them.
    queues[2] = queue("a1", "a")
    ssn = open_session(snapshot(nodes=[node("n1")], queues=queues, jobs=jobs),
                       conf("enqueue", [[{"name": "capacity", "enableHierarchy": True}]]))
    holding = [ssn.queues[n] for n in ("a1", "a2", "a0")]
    key = static_key(ssn.plugins["capacity"].queue_opts, True, holding)
    assert key is not None
    by_key = sorted(holding, key=lambda q: (*key(q), q.created, q.name))
    assert by_key == sorted(holding, key=lambda q: q.name)


def _world(spec, hierarchy: bool):
    queues, jobs = [], []
    for i, (pick, deserved, priority, created, _) in enumerate(spec):
        parent = "root" if i == 0 or pick % (i + 1) == i else f"q{pick % i}"
        queues.append(queue(f"q{i}", parent if hierarchy else None, priority=priority, created=created,
                            deserved={"cpu": str(deserved), "memory": "100Gi"} if deserved else None))
    parents = {q.parent for q in queues}
    for i, q in enumerate(queues):
        if hierarchy and q.name in parents:
            continue
        for k in range(1 + spec[i][4]):
            jobs.append(job(f"j-{q.name}-{k}", q.name, [task(f"{q.name}-{k}-{t}", cpu="1") for t in range(2)],
                            phase="Pending" if k % 2 else "Inqueue", created=float(k)))
    return snapshot(nodes=[node("n1", cpu="6", memory="64Gi"), node("n2", cpu="5", memory="64Gi")],
                    queues=queues, jobs=jobs)


def _decisions(spec, hierarchy: bool, keyed: bool) -> str:
    import json

    from scheduler_core.framework.callbacks import CallbackRegistry
    from scheduler_core.scheduler import run_session

    cfg = conf("enqueue, allocate, backfill", [["priority", "gang"], [{"name": "capacity",
                                                                      "enableHierarchy": hierarchy}]])
    saved = CallbackRegistry.queue_order_static_key
    if not keyed:
        CallbackRegistry.queue_order_static_key = lambda self, queues, moving=False: None
    try:
        result = run_session(_world(spec, hierarchy), cfg)
    finally:
        CallbackRegistry.queue_order_static_key = saved
    data = result.to_json()
    data.pop("timing")
    return json.dumps(data, sort_keys=True, default=str)


@settings(profiled(settings(max_examples=80, deadline=None)))
@given(st.lists(queue_st, min_size=1, max_size=8), st.booleans())
def test_sessions_decide_alike_with_static_keys_and_with_the_comparator(spec, hierarchy):
    assert _decisions(spec, hierarchy, True) == _decisions(spec, hierarchy, False)


def _holding(spec):
    cfg = conf("allocate", [[{"name": "capacity", "enableHierarchy": True}]])
    ssn = open_session(_world(spec, True), cfg)
    return ssn, [ssn.queues[j.queue] for j in ssn.jobs.values()]


def test_allocate_keys_its_heap_only_when_no_share_on_the_paths_can_move():
    spec = [(0, None, 0, 0.0, 1), (0, None, 0, 0.0, 1), (1, None, 0, 1.0, 0), (1, None, 0, 0.0, 2)]
    ssn, holding = _holding(spec)
    assert ssn.queue_order_static_key(holding, moving=True) is not None  # all best-effort: share 1
    spec[1] = (0, 4, 0, 0.0, 1)  # q1, on the paths, now has a deserved: its share moves
    ssn, holding = _holding(spec)
    assert ssn.queue_order_static_key(holding, moving=True) is None
