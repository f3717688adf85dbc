"""capacity's enqueue verdicts (plugins/capacity/verdicts.py): the copy-free walk equals the
Resource arithmetic it replaces, and the memo never changes what enqueue decides or records."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.plugins.capacity import verdicts
from scheduler_core.plugins.capacity.verdicts import EnqueueVerdicts, Moves, walk
from scheduler_core.plugins.util.queue_attr import QueueAttr, quota_message
from scheduler_core.resources import Resource
from scheduler_core.scheduler import run_session
from tests.conftest import profiled
from tests.scheduler_core.builders import GPU, conf, job, node, queue, snapshot, task

amount = st.sampled_from([0.0, 500.0, 1000.0, 1999.95, 2000.0, 4000.0, 0.05])
resources = st.builds(lambda c, m, g, has_g: Resource(c, m * 2**20, {GPU: g} if has_g else None),
                      amount, amount, amount, st.booleans())


def _reference(chain: list[QueueAttr], min_req: Resource):
    """The loop `job_enqueueable` ran before verdicts.py (Resource copies at every level)."""
    for attr in reversed(chain):
        if attr.real_capability is None:
            continue
        used = attr.allocated.clone().add(attr.inqueue).sub_without_assert(attr.elastic)
        ok, names = min_req.clone().add(used).less_equal_with_dimension_and_resources_name(
            attr.real_capability, min_req)
        if not ok:
            left = attr.real_capability.clone().sub_without_assert(used)
            return attr.name, quota_message(attr.name, names, min_req, left)
    return None


@settings(profiled(settings(max_examples=300)))
@given(st.lists(st.tuples(resources, resources, resources, st.one_of(st.none(), resources)), min_size=1,
                max_size=4), resources)
def test_the_walk_equals_the_resource_arithmetic(levels, min_req):
    chain = []
    for i, (allocated, inqueue, elastic, cap) in enumerate(levels):
        attr = QueueAttr(name=f"q{i}")
        attr.allocated, attr.inqueue, attr.elastic, attr.real_capability = allocated, inqueue, elastic, cap
        chain.append(attr)
    got = walk(chain, min_req)
    assert (None if got is None else (got[0].name, got[1])) == _reference(chain, min_req)


jobs_st = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["1", "2", "3"]), st.booleans()),
                   min_size=1, max_size=14)


def _world(spec, running):
    queues = [queue("a", capability={"cpu": "6"}), queue("b"), queue("a1", "a", capability={"cpu": "4"}),
              queue("a2", "a"), queue("b1", "b", capability={"cpu": "3", "memory": "8Gi"}), queue("b2", "b")]
    leaves = ["a1", "a2", "b1", "b2"]
    jobs = [job(f"j{k}", leaves[q], [task(f"t{k}", cpu=cpu)], phase="Pending",
                min_resources={"cpu": cpu, "memory": "1Gi"} if with_min else {"cpu": cpu})
            for k, (q, cpu, with_min) in enumerate(spec)]
    jobs += [job(f"r{k}", leaves[k % 4], [task(f"rt{k}", status="Running", node="n1")], phase="Running")
             for k in range(running)]
    return snapshot(nodes=[node("n1", cpu="16", memory="64Gi")], queues=queues, jobs=jobs)


def _run(spec, running, with_memo, monkeypatch):
    if not with_memo:
        def unmemoised(self, leaf, min_req, chain):
            got = verdicts.walk(chain if isinstance(chain, list) else chain(), min_req)
            return None if got is None else (got[0].name, got[1])

        monkeypatch.setattr(EnqueueVerdicts, "verdict", unmemoised)
    cfg = conf("enqueue, allocate", [["priority", "gang"], [{"name": "capacity", "enableHierarchy": True}]])
    result = run_session(_world(spec, running), cfg)
    monkeypatch.undo()
    data = result.to_json()
    data.pop("timing")
    return json.dumps(data, sort_keys=True, default=str)


@settings(profiled(settings(max_examples=60, deadline=None)))
@given(jobs_st, st.integers(0, 4))
def test_enqueue_decides_and_records_the_same_with_the_memo(spec, running):
    from _pytest.monkeypatch import MonkeyPatch

    mp = MonkeyPatch()
    assert _run(spec, running, True, mp) == _run(spec, running, False, mp)


def test_one_walk_per_shape_while_the_figures_stand_still():
    moves = Moves()
    memo = EnqueueVerdicts(moves)
    attr = QueueAttr(name="q")
    attr.real_capability = Resource(1000.0, 2**30)
    for _ in range(3):
        assert memo.verdict("q", Resource(2000.0, 0.0), lambda: [attr]) == ("q", memo.verdict(
            "q", Resource(2000.0, 0.0), lambda: [attr])[1])
    assert memo.walks == 1
    moves.moved("q")  # a figure moved
    attr.real_capability = Resource(4000.0, 2**30)
    assert memo.verdict("q", Resource(2000.0, 0.0), lambda: [attr]) is None
    assert memo.walks == 2
