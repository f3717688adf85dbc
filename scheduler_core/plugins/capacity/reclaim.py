"""capacity's reclaim side: its triple check and `ancestorReclaimLevel` (Volcano >= 1.15; docs/semantics.md
section 6).

Leaf rules (N = 0, the default): a reclaimee must share a dimension with the reclaimer's
request, leave its queue's guarantee intact, and either use no dimension of its queue's deserved
(immediate victim) or come from a queue (simulated) above its deserved on one of its dimensions.

`ancestorReclaimLevel: N` (hierarchy only) looks at the ancestors 1..N levels above each leaf,
never the root:
- preemptive: a reclaimer whose leaf is at its deserved on every requested dimension may still
  reclaim when such an ancestor would stay at or under its deserved on a requested dimension;
- a victim is kept only if, at each level 1..N where the victim's and the reclaimer's ancestors
  differ, the victim's ancestor has no deserved on the victim's dimensions or is (simulated)
  above its deserved on one of them; chosen victims lower the simulated ancestors too;
- an otherwise immediate victim is skipped when it shares a non-root ancestor within N levels
  with a reclaimer whose leaf has no deserved on the requested dimensions (that subtree's
  best-effort queues do not take from each other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.resources import MIN_RESOURCE, Resource, Zero

if TYPE_CHECKING:
    from scheduler_core.model import TaskInfo
    from scheduler_core.plugins.util.queue_attr import QueueAttr

ROOT = "root"
ARG = "ancestorReclaimLevel"


def parse_level(arguments: dict[str, Any]) -> int:
    """The plugin's `ancestorReclaimLevel` (default 0); ValueError naming the bad value."""
    raw = arguments.get(ARG, 0)
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise ValueError(f"{ARG} must be a non-negative integer, got {raw!r}")
    try:
        level = int(raw)
    except ValueError:
        raise ValueError(f"{ARG} must be a non-negative integer, got {raw!r}") from None
    if level < 0:
        raise ValueError(f"{ARG} must be a non-negative integer, got {raw!r}")
    return level


def ancestors_up(attr: QueueAttr, level: int) -> list[str]:
    """Ancestors 1..level above the queue (parent first), the root left out."""
    out = []
    for k in range(1, level + 1):
        if k > len(attr.ancestors):
            break
        name = attr.ancestors[-k]
        if name == ROOT:
            break
        out.append(name)
    return out


def _within(allocated: Resource, deserved: Resource, req: Resource) -> bool:
    """allocated + req stays at or under deserved on some requested dimension."""
    return allocated.clone().add(req).less_equal_partly_with_dimension(deserved, req)


def preemptive(opts: dict[str, QueueAttr], attr: QueueAttr, task: TaskInfo, level: int) -> bool:
    """The leaf, or (N >= 1) an ancestor 1..N up, stays within deserved on a requested dimension."""
    if _within(attr.allocated, attr.deserved, task.resreq):
        return True
    return any(_within(opts[a].allocated, opts[a].deserved, task.resreq) for a in ancestors_up(attr, level))


def _over(allocated: Resource, deserved: Resource, names: list[str]) -> bool:
    return any(allocated.get(n) > deserved.get(n) + MIN_RESOURCE for n in names)


def reclaimable(opts: dict[str, QueueAttr], queue_of: dict[str, str], reclaimer: TaskInfo,
                reclaimees: list[TaskInfo], level: int) -> list[TaskInfo]:
    """Victims among `reclaimees` (in offer order) on per-queue simulated allocations.

    `queue_of` maps a job uid to its queue name.
    """
    victims: list[TaskInfo] = []
    allocations: dict[str, Resource] = {}
    wanted = set(reclaimer.resreq.resource_names())
    r_attr = opts.get(queue_of[reclaimer.job_uid]) if level else None
    r_ups = ancestors_up(r_attr, level) if r_attr is not None else []
    r_leaf_best_effort = r_attr is not None and not wanted.intersection(r_attr.deserved.resource_names())

    def sim(name: str) -> Resource:
        hit = allocations.get(name)
        if hit is None:
            hit = allocations[name] = opts[name].allocated.clone()
        return hit

    for reclaimee in reclaimees:
        attr = opts.get(queue_of[reclaimee.job_uid])
        if attr is None:
            continue
        allocated = sim(attr.name)
        uses = reclaimee.resreq.resource_names()
        if not wanted.intersection(uses):
            continue  # frees nothing the reclaimer needs
        if not attr.guarantee.less_equal(allocated.clone().sub_without_assert(reclaimee.resreq), Zero):
            continue  # would dig into the queue's guarantee
        shared = [n for n in uses if n in set(attr.deserved.resource_names())]
        if shared and not _over(allocated, attr.deserved, shared):
            continue  # the queue is within its deserved where the reclaimee counts
        ups = ancestors_up(attr, level) if level else []
        if not shared and r_leaf_best_effort and set(ups).intersection(r_ups):
            continue  # best-effort queues of one subtree do not reclaim from each other
        if not _ancestors_allow(opts, sim, ups, r_ups, uses):
            continue
        allocated.sub_without_assert(reclaimee.resreq)
        for name in ups:
            sim(name).sub_without_assert(reclaimee.resreq)
        victims.append(reclaimee)
    return victims


def _ancestors_allow(opts: dict[str, QueueAttr], sim: Any, ups: list[str], r_ups: list[str],
                     uses: list[str]) -> bool:
    """At each level where the victim's ancestor differs from the reclaimer's, that ancestor has
    no deserved on the victim's dimensions or is (simulated) above it on one of them."""
    for k, name in enumerate(ups):
        if k < len(r_ups) and r_ups[k] == name:
            continue
        deserved = opts[name].deserved
        names = [n for n in uses if deserved.get(n) >= MIN_RESOURCE]
        if names and not _over(sim(name), deserved, names):
            return False
    return True
