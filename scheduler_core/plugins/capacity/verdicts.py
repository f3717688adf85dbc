"""capacity's enqueue verdicts, memoised while the queue figures stand still.

`job_enqueueable` walks a job's queue chain (leaf to root) and compares min_req + allocated +
inqueue - elastic with the real capability on min_req's dimensions. The answer depends only on
the leaf, the job's min_resources and the chain's figures, so jobs asking the same question get
the same answer: a backlog of refused jobs of one shape in one queue costs one walk per shape,
not one per job. The memo is dropped whenever a figure moves (an admission's inqueue, an
allocate or deallocate event: `CapacityPlugin._figures_moved`), so an answer is never stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduler_core.plugins.util.queue_attr import QueueAttr, quota_message, shape
from scheduler_core.resources import MIN_RESOURCE, Resource

# (failed level, its dimensions over, headroom message) or None: every level has room.
Verdict = tuple[QueueAttr, str] | None


def _le(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


def _fits(attr: QueueAttr, cap: Resource, cpu: float, memory: float,
          scalars: list[tuple[str, float]]) -> bool:
    """min_req + ((allocated + inqueue) - elastic) <= cap on min_req's dimensions: the same
    float operations, in the same order, as the Resource arithmetic below, without its copies."""
    a, i, e = attr.allocated, attr.inqueue, attr.elastic
    if cpu > 0 and not _le(cpu + ((a.milli_cpu + i.milli_cpu) - e.milli_cpu), cap.milli_cpu):
        return False
    if memory > 0 and not _le(memory + ((a.memory + i.memory) - e.memory), cap.memory):
        return False
    for name, v in scalars:
        used = (a.scalars.get(name, 0.0) + i.scalars.get(name, 0.0)) - e.scalars.get(name, 0.0)
        if not _le(v + used, cap.scalars.get(name, 0.0)):
            return False
    return True


def walk(chain: list[QueueAttr], min_req: Resource) -> Verdict:
    """The first level, leaf to root, whose real capability cannot take min_req on top of its
    allocated + inqueue - elastic (with the refusal message), or None."""
    cpu, memory = min_req.milli_cpu, min_req.memory
    scalars = sorted((n, v) for n, v in min_req.scalars.items() if v > 0) if min_req.scalars else []
    for attr in reversed(chain):
        cap = attr.real_capability
        if cap is None or _fits(attr, cap, cpu, memory, scalars):
            continue
        used = attr.allocated.clone().add(attr.inqueue).sub_without_assert(attr.elastic)
        ok, names = min_req.clone().add(used).less_equal_with_dimension_and_resources_name(cap, min_req)
        if not ok:
            left = cap.clone().sub_without_assert(used)
            return attr, quota_message(attr.name, names, min_req, left)
    return None


class EnqueueVerdicts:
    """`walk` answers by (leaf queue, min_req shape), valid until `clear()`."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, tuple[Any, ...]], Verdict] = {}
        self.walks = 0  # chains walked (tests)

    def verdict(self, leaf: str, min_req: Resource, chain: Callable[[], list[QueueAttr]]) -> Verdict:
        """The chain's answer for min_req (memoised)."""
        key = (leaf, shape(min_req))
        if key in self._memo:
            return self._memo[key]
        self.walks += 1
        got = self._memo[key] = walk(chain(), min_req)
        return got

    def clear(self) -> None:
        """A figure moved: forget every answer."""
        self._memo.clear()
