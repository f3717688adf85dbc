"""Share history for every queue: samples for the queues the queue plugin did not report.

The cycle writes one sample per queue in `SessionResult.queues`. Hierarchical capacity
reports every queue (parents and the root included); flat `proportion` and `capacity` without
`enableHierarchy` report only the queues that held jobs in the session, so parents (and idle
leaves) would have no history. `complete_samples` adds the missing ones at write time, built
from the same cycle's samples, so a parent's history is its subtree's:

- an unreported leaf: allocated, request, inqueue and elastic zero (it held no job), deserved None;
- an unreported parent: allocated, request, inqueue, elastic and deserved summed over its
  children (a child without deserved adds nothing to it), `explanation` {"plugin": "rollup",
  "children": [...]} so the page says its figures are sums, not a plugin's computation;
- capability and guarantee from the queue's own settings; weight its own; share 0.

Called by schedweb/scheduling/cycle.py `_run_locked` on the cycle's samples before they are written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.model import QueueInfo
from schedweb.scheduling.sample_copy import Sample

ROOT = "root"
SUMMED = ("allocated", "request", "inqueue", "elastic")


def _add(total: dict[str, float], value: Mapping[str, Any] | None) -> None:
    for key, amount in (value or {}).items():
        total[key] = total.get(key, 0.0) + float(amount)


def _canonical(res: Any) -> dict[str, float] | None:
    # Stored units of the dimensions the queue sets: a snapshot Resource has cpu and memory at 0
    # when unset (a missing capability dimension means unlimited, not zero).
    return None if res is None else {k: v for k, v in res.to_canonical().items() if v}


def complete_samples(samples: list[Sample], queues: Mapping[str, QueueInfo]) -> list[Sample]:
    """`samples` (sample_copy.Sample objects of one cycle) plus one for every queue of `queues`
    (the session's snapshot queues, "root" excluded) that has none; the new ones copy cycle_id,
    created."""
    if not samples:
        return samples
    by_name = {s.queue: s for s in samples}
    first = samples[0]
    added: list[Sample] = []

    def sample_of(name: str) -> Sample:
        found = by_name.get(name)
        if found is not None:
            return found
        info = queues[name]
        kids = [c for c in info.children if c in queues]
        figures: dict[str, dict[str, float]] = {f: {} for f in SUMMED}
        deserved: dict[str, float] | None = None
        explanation = None
        if kids:
            deserved = {}
            for child in (sample_of(c) for c in kids):
                for f in SUMMED:
                    _add(figures[f], getattr(child, f))
                _add(deserved, child.deserved)
            explanation = {"plugin": "rollup", "children": sorted(kids)}
        made = Sample(cycle_id=first.cycle_id, queue=name, created=first.created, deserved=deserved,
                      capability=_canonical(info.capability), guarantee=_canonical(info.guarantee),
                      real_capability=None, share=0.0, weight=info.weight, overused=False,
                      explanation=explanation, **figures)
        by_name[name] = made
        added.append(made)
        return made

    for name in sorted(queues):
        if name != ROOT:
            sample_of(name)
    return [*samples, *added]
