"""Scheduler sharding: the shard this scheduler instance owns (Volcano >= 1.12's
`--scheduler-sharding-mode`; docs/semantics.md, "Scheduler sharding").

A scheduler instance owns a shard, a set of node names (upstream `NodesInShard`: what its
NodeShard desires minus the nodes other shards still use). The caller passes a `Sharding` to
`run_session(..., sharding=...)`; the session turns it into a `ShardView` over its NodeTable
rows (`ssn.shard`) that the actions ask:
- `none` (the default, also `sharding=None`): every node, nothing changes;
- `hard`: a node outside the shard fails the predicate pass of every action with the fit error
  `NOT_IN_SHARD` (`Session.predicate` and preempt/reclaim's candidate nodes apply `failure`);
- `soft`: every node stays feasible, but candidates are tried in groups, the first group with a
  node wins: `groups` is (shard rows, other rows), and allocate splits its idle and future-idle
  gradients by it (idle in shard, idle elsewhere, future idle in shard, future idle elsewhere);
  backfill, preempt and reclaim try the shard first, then the rest. Scores only order nodes
  inside a group.
Names in `nodes_in_shard` that the snapshot does not hold are ignored (a node that left).

Job routing (Volcano's `schedulerName`): `foreign_jobs` are the uids of jobs another scheduler
instance answers to (the caller builds it with `foreign_of`). Their tasks stay in the snapshot
(node usage, queue figures), but the actions only see `ShardView.own_jobs` (`ssn.own_jobs`): no
enqueue, placement, eviction of their tasks, phase, reason or condition. Without foreign jobs
`own_jobs` is the snapshot's own dict (no per-job work).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scheduler_core.framework.node_table import NodeTable

NONE, HARD, SOFT = "none", "hard", "soft"
MODES = (NONE, HARD, SOFT)
# Upstream's fit error for a node outside the shard in hard mode (PredicateNodes).
NOT_IN_SHARD = "node isn't in scheduler node shard"
# Volcano's default schedulerName: what a job names when it names no scheduler.
DEFAULT_SCHEDULER = "volcano"


def responsible(job_scheduler: str, ours: str, shard_schedulers: Iterable[str]) -> bool:
    """Whether the instance answering to `ours` places a job naming `job_scheduler`, given the
    scheduler names of every shard (`shard_schedulers`). A shard's instance takes the jobs naming
    it; the default instance (`ours` naming no shard) takes every job naming no shard's scheduler."""
    names = shard_schedulers if isinstance(shard_schedulers, frozenset | set) else frozenset(shard_schedulers)
    if ours in names:
        return job_scheduler == ours
    return job_scheduler not in names


def foreign_of(job_schedulers: Mapping[str, str], ours: str,
               shard_schedulers: Iterable[str]) -> frozenset[str]:
    """The uids of `job_schedulers` (job uid -> its scheduler name) another instance places."""
    names = frozenset(shard_schedulers)
    return frozenset(uid for uid, name in job_schedulers.items() if not responsible(name, ours, names))


@dataclass(frozen=True)
class Sharding:
    """This scheduler's sharding: mode, the shard's name and the node names in it; the name it
    answers to and the jobs other instances place (`foreign_jobs`, uids)."""

    mode: str = NONE
    shard_name: str = ""
    nodes_in_shard: frozenset[str] = field(default_factory=frozenset)
    scheduler_name: str = ""
    foreign_jobs: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown sharding mode {self.mode!r} (expected one of: {', '.join(MODES)})")
        if not isinstance(self.nodes_in_shard, frozenset):
            object.__setattr__(self, "nodes_in_shard", frozenset(self.nodes_in_shard))
        if not isinstance(self.foreign_jobs, frozenset):
            object.__setattr__(self, "foreign_jobs", frozenset(self.foreign_jobs))

    @classmethod
    def of(cls, mode: str, shard_name: str = "", nodes: Iterable[str] = ()) -> Sharding:
        """A Sharding from any iterable of node names."""
        return cls(mode, shard_name, frozenset(nodes))

    def to_json(self) -> dict[str, Any]:
        """`{mode, shard_name, nodes_in_shard}` (names sorted), plus `scheduler_name` and
        `foreign_jobs` (sorted) when set."""
        out: dict[str, Any] = {"mode": self.mode, "shard_name": self.shard_name,
                               "nodes_in_shard": sorted(self.nodes_in_shard)}
        if self.scheduler_name:
            out["scheduler_name"] = self.scheduler_name
        if self.foreign_jobs:
            out["foreign_jobs"] = sorted(self.foreign_jobs)
        return out


class ShardView:
    """One session's shard over its NodeTable rows (read-only masks)."""

    __slots__ = ("sharding", "mode", "soft", "in_shard", "failure", "groups", "foreign")

    def __init__(self, sharding: Sharding | None, table: NodeTable) -> None:
        self.sharding = sharding
        self.mode = NONE if sharding is None else sharding.mode
        self.soft = self.mode == SOFT
        self.foreign: frozenset[str] = frozenset() if sharding is None else sharding.foreign_jobs
        n = len(table)
        if self.mode == NONE:
            self.in_shard = np.ones(n, dtype=bool)
        else:
            assert sharding is not None
            self.in_shard = np.fromiter((name in sharding.nodes_in_shard for name in table.names),
                                        dtype=bool, count=n)
        self.in_shard.flags.writeable = False
        # Hard mode: (fit error, rows outside the shard) for the predicate pass; else None.
        self.failure: tuple[str, np.ndarray] | None = None
        if self.mode == HARD and not self.in_shard.all():
            outside = ~self.in_shard
            outside.flags.writeable = False
            self.failure = (NOT_IN_SHARD, outside)
        # Soft mode: the row groups, tried in order (shard, then the rest); else one group, None
        # (every row), so that callers loop the same way at no cost.
        self.groups: tuple[np.ndarray | None, ...] = (None,)
        if self.soft:
            outside = ~self.in_shard
            outside.flags.writeable = False
            self.groups = (self.in_shard, outside)

    def own_jobs(self, jobs: dict[str, Any]) -> dict[str, Any]:
        """The jobs this instance places: `jobs` itself (the same dict) without foreign jobs,
        else a copy without them (snapshot order)."""
        if not self.foreign:
            return jobs
        foreign = self.foreign
        return {uid: job for uid, job in jobs.items() if uid not in foreign}

    def own_tasks(self, tasks: list[Any]) -> list[Any]:
        """`tasks` less those of foreign jobs (a plugin's victims)."""
        if not self.foreign:
            return tasks
        return [t for t in tasks if t.job_uid not in self.foreign]

    def same_group(self, row: int) -> np.ndarray | None:
        """Soft mode: the group of `row` (a mask); else None (every row)."""
        if not self.soft:
            return None
        return self.groups[0] if self.in_shard[row] else self.groups[1]

    def ordered(self, rows: np.ndarray) -> list[int]:
        """The rows of a mask in name order, in soft mode the shard's first (reclaim's walk)."""
        if not self.soft:
            return np.flatnonzero(rows).tolist()
        return np.flatnonzero(rows & self.in_shard).tolist() + np.flatnonzero(rows & ~self.in_shard).tolist()

    def split(self, rows: np.ndarray) -> list[np.ndarray]:
        """A mask cut into the groups, in the order they are tried ([rows] unless soft)."""
        if not self.soft:
            return [rows]
        return [rows & self.in_shard, rows & ~self.in_shard]

    def summary(self, placed: dict[str, str]) -> dict[str, Any] | None:
        """The sharding view of `simulate --json`: the Sharding plus, of the `placed` tasks
        (task -> node), those outside the shard; None when the session had no sharding."""
        if self.sharding is None:
            return None
        out = self.sharding.to_json()
        if self.mode != NONE:
            inside = self.sharding.nodes_in_shard
            out["placed_outside_shard"] = {t: n for t, n in sorted(placed.items()) if n not in inside}
        return out
