"""The sharding controller (Volcano >= 1.12): which nodes each NodeShard desires.

`assign(shards, nodes)` is the policy, a pure function: Volcano's built-in one, each shard's node
count range and CPU utilisation band. `controller_step()` reads the cluster, computes it, holds
back nodes another shard still has work in flight on, and writes every changed shard through
schedweb.core.services.node_shard_set_desired. The Celery beat task
`schedweb.scheduling.shard_controller` runs it every SHARD_CONTROLLER_PERIOD seconds; `manage.py
shard_controller [--once]` runs it without a broker.

The policy, in order (docs/semantics.md "Scheduler sharding"):
1. Keep: a node stays in the shard that desires it now (the first by name if two do), up to
   the shard's max_nodes (in-band nodes first, then by name). A node gone from the cluster is
   dropped; an unschedulable node is kept where it is and never placed anew.
2. Cross: a node whose utilisation left its shard's band moves to a shard whose band holds it
   and has room, unless that takes its shard below min_nodes.
3. Band: a shard below min_nodes first takes the unplaced nodes in its band; then every other
   node goes to a shard whose band holds it and has room.
4. Range: a shard still below min_nodes takes the unplaced nodes nearest its band, then the
   nodes of shards above their own min_nodes (those placed there in this step first, then
   those out of their band).
5. Rest: a node still unplaced goes to a band shard with room, else to the shard with the
   fewest nodes that has room.
Ties go to the shard with the fewest nodes, then the first by name; nodes are taken in name
order. So the assignment changes only as nodes come, go or cross bands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from celery import shared_task

logger = logging.getLogger(__name__)

# A task of a job routed to a shard's scheduler in one of these statuses is work in flight on
# its node: the node stays in that shard's desired list until it is done.
IN_FLIGHT_STATUSES = ("Binding", "Pipelined", "Allocated", "Releasing")


@dataclass(frozen=True)
class ShardPolicy:
    """One shard as the policy sees it: its range, its band and the nodes it desires now."""

    name: str
    min_nodes: int = 0
    max_nodes: int | None = None
    cpu_min: float = 0.0
    cpu_max: float = 1.0
    current: tuple[str, ...] = ()

    def holds(self, utilization: float) -> bool:
        """Whether the utilisation lies in the band (both ends included)."""
        return self.cpu_min <= utilization <= self.cpu_max

    def distance(self, utilization: float) -> float:
        """How far the utilisation lies outside the band (0 inside)."""
        return max(self.cpu_min - utilization, utilization - self.cpu_max, 0.0)


@dataclass(frozen=True)
class NodeLoad:
    """One node: its CPU utilisation (allocated cpu requests / allocatable cpu) and whether it
    takes new work."""

    name: str
    utilization: float = 0.0
    unschedulable: bool = False


@dataclass
class _State:
    shards: list[ShardPolicy]
    nodes: dict[str, NodeLoad]
    # Each shard's nodes as an insertion-ordered set (dict keys): taking a node out is O(1).
    members: dict[str, dict[str, None]] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)

    def room(self, shard: ShardPolicy) -> bool:
        return shard.max_nodes is None or len(self.members[shard.name]) < shard.max_nodes

    def put(self, node: str, shard: ShardPolicy) -> None:
        self.members[shard.name][node] = None
        self.owner[node] = shard.name

    def take(self, node: str) -> None:
        del self.members[self.owner.pop(node)][node]

    def fewest(self, candidates: Iterable[ShardPolicy]) -> ShardPolicy | None:
        return min(candidates, key=lambda s: (len(self.members[s.name]), s.name), default=None)

    def band_shard(self, node: NodeLoad, *, besides: str | None = None) -> ShardPolicy | None:
        return self.fewest(s for s in self.shards
                           if s.name != besides and s.holds(node.utilization) and self.room(s))

    def unplaced(self) -> list[NodeLoad]:
        return [n for name, n in sorted(self.nodes.items()) if name not in self.owner and not n.unschedulable]


def assign(shards: Iterable[ShardPolicy], nodes: Iterable[NodeLoad]) -> dict[str, list[str]]:
    """{shard name: its desired node names, sorted} by the policy of the module docstring."""
    state = _State(sorted(shards, key=lambda s: s.name), {n.name: n for n in nodes})
    by_name = {s.name: s for s in state.shards}
    for shard in state.shards:
        state.members[shard.name] = {}
    _keep(state)
    _cross(state, by_name)
    _fill_ranges(state, in_band=True)
    for node in state.unplaced():  # 3. band
        target = state.band_shard(node)
        if target is not None:
            state.put(node.name, target)
    _fill_ranges(state, in_band=False)
    for node in state.unplaced():  # 5. rest
        target = state.band_shard(node) or state.fewest(s for s in state.shards if state.room(s))
        if target is not None:
            state.put(node.name, target)
    return {name: sorted(members) for name, members in state.members.items()}


def _keep(state: _State) -> None:
    """1. Each existing node in the shard desiring it now, up to max_nodes (in band first)."""
    for shard in state.shards:
        mine = sorted({n for n in shard.current if n in state.nodes and n not in state.owner})
        mine.sort(key=lambda n: not shard.holds(state.nodes[n].utilization))  # stable: in band first
        for name in mine[:shard.max_nodes] if shard.max_nodes is not None else mine:
            state.put(name, shard)


def _cross(state: _State, by_name: dict[str, ShardPolicy]) -> None:
    """2. Nodes that left their shard's band move to a band shard with room, min_nodes kept."""
    for name in sorted(state.owner):
        node, shard = state.nodes[name], by_name[state.owner[name]]
        if node.unschedulable or shard.holds(node.utilization):
            continue
        if len(state.members[shard.name]) <= shard.min_nodes:
            continue
        target = state.band_shard(node, besides=shard.name)
        if target is not None:
            state.take(name)
            state.put(name, target)


def _fill_ranges(state: _State, *, in_band: bool) -> None:
    """4. Shards below min_nodes take unplaced nodes: `in_band` (before the band step, so a new
    node fills a shard's range before an older node would be moved for it) only those in their
    band; else the nearest their band, then the surplus of shards above their own min_nodes."""
    for shard in state.shards:
        def short(shard: ShardPolicy = shard) -> bool:
            return len(state.members[shard.name]) < shard.min_nodes and state.room(shard)

        if not short():
            continue
        free = [n for n in state.unplaced() if not in_band or shard.holds(n.utilization)]
        for node in sorted(free, key=lambda n: (shard.distance(n.utilization), n.name)):
            if not short():
                break
            state.put(node.name, shard)
        if not in_band:
            _take_surplus(state, shard, short)


def _take_surplus(state: _State, shard: ShardPolicy, short: Callable[[], bool]) -> None:
    """While `shard` is short, a node of the shard most above its own min_nodes: one placed there
    in this step first (so an older node keeps its place), then one out of that shard's band,
    then the nearest `shard`'s band, then by name. Each donor's candidates are ordered once."""
    def surplus(s: ShardPolicy) -> int:
        return len(state.members[s.name]) - s.min_nodes

    ordered: dict[str, Iterator[str]] = {}
    dry: set[str] = set()  # donors whose every movable node was taken (the rest unschedulable)
    while short():
        donors = [s for s in state.shards if s.name != shard.name and surplus(s) > 0 and s.name not in dry]
        donor = min(donors, key=lambda s: (-surplus(s), s.name), default=None)
        if donor is None:
            return
        if donor.name not in ordered:
            settled = set(donor.current)
            movable = [state.nodes[n] for n in state.members[donor.name] if not state.nodes[n].unschedulable]
            movable.sort(key=lambda n: (n.name in settled, donor.holds(n.utilization),
                                        shard.distance(n.utilization), n.name))
            ordered[donor.name] = iter([n.name for n in movable])
        pick = next(ordered[donor.name], None)
        if pick is None:
            dry.add(donor.name)
            continue
        state.take(pick)
        state.put(pick, shard)


# --------------------------------------------------------------------------- the controller step


def _loads() -> list[NodeLoad]:
    """Every node with its CPU utilisation from the task rows holding it (one query)."""
    from schedweb.core.models import NODE_BOUND_TASK_STATUSES, Node, Task

    allocated: dict[int, float] = {}
    rows = Task.objects.filter(node__isnull=False, status__in=NODE_BOUND_TASK_STATUSES).values_list(
        "node_id", "request").order_by()
    for node_id, request in rows:
        cpu = (request or {}).get("cpu")
        if isinstance(cpu, int | float) and not isinstance(cpu, bool):
            allocated[node_id] = allocated.get(node_id, 0.0) + cpu
    out = []
    for pk, name, allocatable, unschedulable in Node.objects.values_list("pk", "name", "allocatable",
                                                                          "unschedulable"):
        cpu = (allocatable or {}).get("cpu") or 0
        used = allocated.get(pk, 0.0)
        out.append(NodeLoad(name, min(used / cpu, 1.0) if cpu > 0 else (1.0 if used else 0.0), unschedulable))
    return out


def _in_flight() -> set[tuple[str, str]]:
    """(scheduler name, node name) of every task in flight (IN_FLIGHT_STATUSES)."""
    from schedweb.core.models import Task

    return set(Task.objects.filter(status__in=IN_FLIGHT_STATUSES, node__isnull=False).values_list(
        "job__scheduler_name", "node__name").distinct().order_by())


def _held_back(shards: list[Any], target: dict[str, list[str]], busy: set[tuple[str, str]]
               ) -> dict[str, list[str]]:
    """The target with every node that would leave a shard while that shard's scheduler still
    has work in flight on it left in that shard (and out of any other) for this step."""
    out = {name: list(nodes) for name, nodes in target.items()}
    for shard in shards:
        for node in shard.nodes_desired:
            if node in out[shard.name] or (shard.scheduler_name, node) not in busy:
                continue
            for other in out.values():
                if node in other:
                    other.remove(node)
            out[shard.name].append(node)
    return {name: sorted(nodes) for name, nodes in out.items()}


def controller_step(now: Any = None) -> dict[str, Any]:
    """One step: compute the assignment, hold back nodes with work in flight, write each changed
    shard (node_shard_set_desired; one transaction, so no reader sees a node in two shards or a
    half-written step). A summary for logs: {"shards", "changed", "held_back"}."""
    from django.db import transaction
    from django.utils import timezone

    from schedweb.core.models import NodeShard

    now = now or timezone.now()
    with transaction.atomic():
        shards = list(NodeShard.objects.select_for_update().order_by("pk"))
        policies = [ShardPolicy(s.name, s.min_nodes, s.max_nodes, s.cpu_utilization_min,
                                s.cpu_utilization_max, tuple(s.nodes_desired)) for s in shards]
        target = assign(policies, _loads())
        wanted = _held_back(shards, target, _in_flight())
        held = sum(len(set(wanted[s.name]) - set(target[s.name])) for s in shards)
        changed = _write(shards, wanted, now)
    return {"shards": len(shards), "changed": changed, "held_back": held}


def _write(shards: list[Any], wanted: dict[str, list[str]], now: Any) -> list[str]:
    """Write the changed shards so that no write names a node another shard still desires: a
    shard whose new nodes are all free goes first; when none is (nodes swapped between shards),
    one of them gives up its leaving nodes first."""
    from schedweb.core import services

    desired = {s.name: set(s.nodes_desired) for s in shards}
    todo = [s for s in shards if desired[s.name] != set(wanted[s.name])]
    changed = [s.name for s in todo]
    def blocked(shard: Any) -> bool:
        coming = set(wanted[shard.name]) - desired[shard.name]
        return any(coming & nodes for other, nodes in desired.items() if other != shard.name)

    while todo:
        ready = next((s for s in todo if not blocked(s)), None)
        if ready is None:
            # A swap: a shard holding a node another one waits for lets its leaving nodes go
            # first (one exists: a node wanted elsewhere is leaving the shard holding it).
            first = next(s for s in todo if desired[s.name] - set(wanted[s.name]))
            kept = sorted(desired[first.name] & set(wanted[first.name]))
            services.node_shard_set_desired(shard=first, nodes=kept, now=now)
            desired[first.name] = set(kept)
            continue
        services.node_shard_set_desired(shard=ready, nodes=wanted[ready.name], now=now)
        desired[ready.name] = set(wanted[ready.name])
        todo.remove(ready)
    return changed


@shared_task(name="schedweb.scheduling.shard_controller", ignore_result=True)
def shard_controller_task() -> dict[str, Any]:
    """The beat task: one controller step (its summary is logged)."""
    summary = controller_step()
    if summary["changed"]:
        logger.info("shard controller: %s", summary)
    return summary
