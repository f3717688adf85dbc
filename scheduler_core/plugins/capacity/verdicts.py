"""capacity's enqueue verdicts and refusal details, memoised while their queues stand still.

`job_enqueueable` walks a job's queue chain (leaf to root) and compares min_req + allocated +
inqueue - elastic with the real capability on min_req's dimensions. The answer depends only on
the leaf, the job's min_resources and the figures of the levels the walk looked at (leaf up to
the first level that refuses, the whole chain when none does), so jobs asking the same question
get the same answer: a backlog of refused jobs of one shape in one queue costs one walk per
shape, not one per job. Every queue has a move counter (`Moves`): an admission's inqueue, an
allocate or deallocate event moves the levels it touches, and each memoised answer holds the
counters of the queues it read (`StampedMemo`), so it is given back only while none of them
moved: an answer is never stale. With the kept tree (`kept_tree.py`) the counters and memos
live across sessions: a session open moves every queue whose opened figures may differ from
the last session's (`Moves.settle`), so a verdict for an unchanged queue is a lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from scheduler_core.plugins.util.queue_attr import QueueAttr, chain_entry, quantities, quota_message
from scheduler_core.resources import MIN_RESOURCE, Resource

# (failed level, its dimensions over, headroom message) or None: every level has room.
Verdict = tuple[QueueAttr, str] | None
# (failed level's name, message) or None: what the memo keeps (attrs are per session).
NamedVerdict = tuple[str, str] | None

MISSING = object()
MAX_MEMO = 50_000  # entries per memo before it starts afresh (distinct questions are few)


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


def walk(chain: list[QueueAttr], min_req: Resource, messages: StampedMemo | None = None,
         key: tuple[Any, ...] | None = None) -> Verdict:
    """The first level, leaf to root, whose real capability cannot take min_req on top of its
    allocated + inqueue - elastic (with the refusal message), or None.

    `messages` memoises a level's refusal message per (level, `key`: min_req's shape) while that
    level does not move: after an admission elsewhere, jobs refused at the root share the one
    new message instead of each formatting it.
    """
    cpu, memory = min_req.milli_cpu, min_req.memory
    scalars = sorted((n, v) for n, v in min_req.scalars.items() if v > 0) if min_req.scalars else []
    for attr in reversed(chain):
        cap = attr.real_capability
        if cap is None:
            continue
        # _fits inline (once per level of every waiting job's walk): the same float operations.
        a, i, e = attr.allocated, attr.inqueue, attr.elastic
        if not ((not cpu > 0 or _le(cpu + ((a.milli_cpu + i.milli_cpu) - e.milli_cpu), cap.milli_cpu))
                and (not memory > 0 or _le(memory + ((a.memory + i.memory) - e.memory), cap.memory))
                and (not scalars or _fits(attr, cap, 0.0, 0.0, scalars))):
            found = _refused(attr, cap, min_req, messages, key)
            if found is not None:
                return found
    return None


def _refused(attr: QueueAttr, cap: Resource, min_req: Resource, messages: StampedMemo | None,
             key: tuple[Any, ...] | None) -> Verdict:
    """The level's refusal (with its message), or None when the Resource check lets it pass."""
    if messages is not None:
        got = messages.get((attr.name, key))
        if got is not MISSING:
            return None if got is None else (attr, got)
    used = attr.allocated.clone().add(attr.inqueue).sub_without_assert(attr.elastic)
    ok, names = min_req.clone().add(used).less_equal_with_dimension_and_resources_name(cap, min_req)
    message = None if ok else quota_message(attr.name, names, min_req, cap.clone().sub_without_assert(used))
    if messages is not None:
        messages.put((attr.name, key), (attr.name,), message)
    return None if message is None else (attr, message)


class Moves:
    """A move counter per queue; `dirty`: the queues moved since the last `settle`."""

    def __init__(self) -> None:
        self.stamp: dict[str, int] = {}
        self.clock = 0
        self.dirty: set[str] = set()

    def moved(self, name: str) -> None:
        """The queue's figures changed within the session."""
        self.clock += 1
        self.stamp[name] = self.clock
        self.dirty.add(name)

    def settle(self, changed: Iterable[str]) -> None:
        """A session opens: the queues whose figures were recomputed, and those the last session
        moved (their opened figures are not the ones it left), get new counters."""
        for name in (*changed, *self.dirty):
            self.clock += 1
            self.stamp[name] = self.clock
        self.dirty.clear()

    def deps(self, names: Iterable[str]) -> tuple[tuple[str, int], ...]:
        """The current counters of the named queues (what a memoised answer holds)."""
        get = self.stamp.get
        return tuple([(n, get(n, 0)) for n in names])

    def hold(self, deps: tuple[tuple[str, int], ...]) -> bool:
        """None of the queues moved since `deps` was taken."""
        get = self.stamp.get
        for name, s in deps:  # noqa: SIM110 - a loop, not all(): it runs at every memo lookup
            if get(name, 0) != s:
                return False
        return True


class StampedMemo:
    """Answers by key, each with the counters of the queues it was computed from."""

    def __init__(self, moves: Moves) -> None:
        self.moves = moves
        self._memo: dict[Any, tuple[tuple[tuple[str, int], ...], Any, int]] = {}

    def get(self, key: Any) -> Any:
        """The answer while none of its queues moved, else MISSING."""
        hit = self._memo.get(key)
        if hit is not None:
            moves = self.moves
            # No queue moved at all since it was kept: no counter to compare.
            if hit[2] == moves.clock or moves.hold(hit[0]):
                return hit[1]
        return MISSING

    def put(self, key: Any, names: Iterable[str], value: Any) -> Any:
        """Keep `value`, computed from the named queues' current figures; returns it."""
        memo = self._memo
        if len(memo) >= MAX_MEMO:
            memo.clear()
        moves = self.moves
        memo[key] = (moves.deps(names), value, moves.clock)
        return value


class EnqueueVerdicts:
    """`walk` answers by (leaf queue, min_req shape), valid while the levels walked stand still."""

    def __init__(self, moves: Moves | None = None) -> None:
        moves = moves if moves is not None else Moves()
        self.memo = StampedMemo(moves)
        self.messages = StampedMemo(moves)  # per (level, shape): walk's refusal message
        self.walks = 0  # chains walked (tests)
        self._names: dict[str, tuple[list[QueueAttr], list[str]]] = {}  # leaf -> (chain, its names)

    def verdict(self, leaf: str, min_req: Resource,
                chain: list[QueueAttr] | Callable[[], list[QueueAttr]]) -> NamedVerdict:
        """The chain's answer for min_req (memoised): (failed level's name, message) or None.
        `chain`: root .. leaf attrs, or a function giving them (asked only when not memoised)."""
        req = (min_req.milli_cpu, min_req.memory,
               tuple(sorted(min_req.scalars.items())) if min_req.scalars else ())  # shape(min_req)
        key = (leaf, req)
        got = self.memo.get(key)
        if got is not MISSING:
            return got
        self.walks += 1
        levels = chain if isinstance(chain, list) else chain()
        found = walk(levels, min_req, self.messages, req)
        names = self.names(levels)
        if found is None:
            return self.memo.put(key, names, None)
        # The walk looked at the leaf up to the level that refused, not above it.
        at = levels.index(found[0])
        return self.memo.put(key, names[at:] if at else names, (found[0].name, found[1]))

    def names(self, chain: list[QueueAttr]) -> list[str]:
        """The chain's queue names (kept per leaf with the chain object: the tree may change)."""
        leaf = chain[-1].name
        hit = self._names.get(leaf)
        if hit is None or hit[0] is not chain:
            hit = self._names[leaf] = (chain, [a.name for a in chain])
        return hit[1]


class ChainMemos:
    """What capacity memoises from queue figures: enqueue verdicts, chain details (per leaf,
    failed level and with inqueue) and their entries (per level and with inqueue: siblings
    share their ancestors'), allocatable's refusals (per leaf, failed level and request shape),
    all on one set of move counters."""

    def __init__(self, moves: Moves | None = None) -> None:
        self.moves = moves if moves is not None else Moves()
        self.verdicts = EnqueueVerdicts(self.moves)
        self.details = StampedMemo(self.moves)
        self.entries = StampedMemo(self.moves)
        self.refusals = StampedMemo(self.moves)

    def chain_details(self, chain: list[QueueAttr], failed: QueueAttr, with_inqueue: bool) -> dict[str, Any]:
        """A refusal record's details: every level's figures (root .. leaf) and the failed level."""
        entries, memo = [], self.entries
        for a in chain:
            # Per level while it does not move (shared read-only): after an admission only the
            # levels it moved are quoted anew.
            entry = memo.get((a.name, with_inqueue))
            if entry is MISSING:
                entry = chain_entry(a, a.real_capability)
                entry["real_capability"] = quantities(a.real_capability)
                if with_inqueue:
                    entry["inqueue"] = quantities(a.inqueue)
                memo.put((a.name, with_inqueue), (a.name,), entry)
            entries.append(entry)
        return {"queue_chain": entries, "limit": "real_capability", "failed_queue": failed.name}
