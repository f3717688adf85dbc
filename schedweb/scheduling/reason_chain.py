"""A reason's queue chain kept by reference: names on the job row, figures from the cycle's samples.

A quota reason (and a NeverFits queue limit) quotes its queue chain: per level root .. leaf the
queue's deserved, allocated, capability, real capability, inqueue and headroom
(`scheduler_core.explain.reason_figures.chain_entry`), all of them the figures the cycle commits
as its QueueSample rows. Those figures move nearly every cycle, so a row holding them changed
every cycle for every job waiting on a quota (3,500 rows of about 2 KB each per cycle at L),
although the job's reason (code, message, the shortfall) had not.

The cycle therefore stores each level as `{"queue", "headroom_of"}` only (`by_reference`), and
the readers (`fill`: the job's API detail and its dashboard page) put the newest cycle's figures
back, computed by the same `chain_entry` from the same samples: what a reader gets is what a
rewrite in that cycle would have stored. A job's row is written again only when its reason
says something new.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler_core.explain.reason_figures import chain_entry
from scheduler_core.resources import Resource
from schedweb.scheduling.selectors import latest_samples

FIGURES = ("deserved", "allocated", "capability", "real_capability", "inqueue")
_REF_KEYS = frozenset({"queue", "headroom_of"})


def by_reference(details: dict[str, Any], memo: dict[int, tuple[object, object]]) -> dict[str, Any]:
    """`details` with its `queue_chain` levels reduced to `{"queue", "headroom_of"}` (itself when
    it has no such chain). `memo` keeps one reduced list per chain list seen (reasons of one queue
    share theirs), keyed by id while it holds the original."""
    chain = details.get("queue_chain")
    if not isinstance(chain, list) or not chain:
        return details
    hit = memo.get(id(chain))
    if hit is None or hit[0] is not chain:
        if not all(isinstance(e, dict) and "headroom_of" in e and "queue" in e for e in chain):
            hit = (chain, chain)  # not a rendered chain: stored as it is
        else:
            hit = (chain, [{"queue": e["queue"], "headroom_of": e["headroom_of"]} for e in chain])
        memo[id(chain)] = hit
    if hit[1] is chain:
        return details
    return {**details, "queue_chain": hit[1]}


@dataclass(frozen=True)
class SampleFigures:
    """A queue's figures as one cycle committed them (Resources; None where not reported)."""

    deserved: Resource | None
    allocated: Resource | None
    capability: Resource | None
    real_capability: Resource | None
    inqueue: Resource | None


def _resource(value: Any) -> Resource | None:
    return Resource.from_canonical(value) if isinstance(value, dict) else None


def newest_figures() -> dict[str, SampleFigures]:
    """Per queue, the figures of the newest cycle that recorded samples (one query)."""
    return {name: SampleFigures(*(_resource(row.get(f)) for f in FIGURES))
            for name, row in latest_samples(FIGURES).items()}


def fill(details: Any, figures: dict[str, SampleFigures] | None = None) -> Any:
    """`details` with every by-reference chain level rendered from `figures` (default: the newest
    cycle's); a level whose queue has no sample keeps its name only. A new dict; `details`
    itself when there is nothing to fill."""
    if not isinstance(details, dict):
        return details
    chain = details.get("queue_chain")
    if not isinstance(chain, list) or not any(isinstance(e, dict) and e.keys() == _REF_KEYS for e in chain):
        return details
    if figures is None:
        figures = newest_figures()
    levels = []
    for entry in chain:
        is_ref = isinstance(entry, dict) and entry.keys() == _REF_KEYS
        fig = figures.get(entry["queue"]) if is_ref else None
        if fig is not None:
            entry = chain_entry(str(entry["queue"]), fig, str(entry["headroom_of"]))
        levels.append(entry)
    return {**details, "queue_chain": levels}
