"""One scheduler instance per shard (docs/semantics.md "Scheduler sharding"; issue 32 item 4).

A process runs the cycles of one instance: the unsharded default (`shard=""`) or the shard named
by `run_scheduler --shard NAME` / the Celery task's argument. Each cycle `resolve()` reads the
NodeShard rows (one small query; none exist on an unsharded cluster, and then nothing else
happens) and gives the cycle what its session needs:

- the leader lock key: the unsharded instance keeps `writes.LEADER_LOCK_KEY`, a shard's is
  derived from its name, so two instances of one shard never overlap but two shards run at once;
- `nodes_in_shard` = the shard's `nodes_desired` less every other shard's `nodes_in_use`
  (upstream NodesInShard: a node another shard still uses is not ours yet);
- the routing (`scheduler_core.framework.sharding.responsible`): the shard's instance answers to
  its `scheduler_name`, the default one to every name no shard's scheduler has. The jobs of the
  other instances are classified *after* the snapshot's load (`Instance.sharding_for`), from the
  scheduler name each loaded job row carries (`adapter.JobRow.scheduler_name`, kept up to date
  by the incremental loader like the rest of the row): no query, and every job the snapshot
  holds is classified by the very row the snapshot was built from.

After the writes, `write_in_use()` sets the shard's `nodes_in_use` (status, a direct UPDATE in
the cycle's transaction): its `nodes_in_shard` plus every node where its jobs still have
in-flight work (Binding or Pipelined tasks, this cycle's included). That one stays a statement
(one index scan of the in-flight tasks, a few ms at L): it reads what was committed up to the
write, a Binding task the agent bound since the load included, which the snapshot cannot know.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from django.db import connection

from scheduler_core.framework.sharding import NONE, Sharding
from scheduler_core.model import ClusterSnapshot
from schedweb.core.models import NodeShard
from schedweb.scheduling import writes
from schedweb.scheduling.adapter import LoadedState

_IN_FLIGHT_SQL = ("SELECT DISTINCT n.name FROM core_task t JOIN core_job j ON t.job_id = j.id "
                  "JOIN core_node n ON t.node_id = n.id "
                  "WHERE t.status IN ('Binding', 'Pipelined') AND {cond}")


class ShardMissing(Exception):
    """The instance names a shard no NodeShard row has."""


def lock_key(shard: str) -> int:
    """The leader lock key of an instance: today's constant for the unsharded one, else a
    63-bit hash of the shard's name (pg advisory keys are signed bigints)."""
    if not shard:
        return writes.LEADER_LOCK_KEY
    digest = hashlib.sha256(f"schedweb-shard-leader:{shard}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


@dataclass
class Instance:
    """What one cycle of an instance knows about the shards (from `resolve`)."""

    shard: str  # "" = the default instance
    sharded: bool  # any NodeShard exists (else everything below is empty and unused)
    mode: str = NONE
    scheduler_name: str = ""  # "" for the default instance
    schedulers: frozenset[str] = field(default_factory=frozenset)  # every shard's scheduler name
    nodes_in_shard: frozenset[str] = field(default_factory=frozenset)
    in_use: list[str] = field(default_factory=list)  # the row's nodes_in_use as read
    foreign: frozenset[str] = field(default_factory=frozenset)  # set by sharding_for

    def _cond(self) -> tuple[str, list[object]]:
        """SQL condition on `j`-less core_job columns for jobs of *other* instances."""
        if self.scheduler_name:
            return "scheduler_name <> %s", [self.scheduler_name]
        return "scheduler_name = ANY(%s)", [sorted(self.schedulers)]

    def foreign_in(self, snapshot: ClusterSnapshot, state: LoadedState) -> frozenset[str]:
        """The uids of the snapshot's jobs another instance places, by the scheduler name of
        their loaded rows (`_cond`'s test, in memory)."""
        rows = state.jobs
        if self.scheduler_name:
            ours = self.scheduler_name
            return frozenset(uid for uid in snapshot.jobs if (row := rows.get(uid)) is not None
                             and row.scheduler_name != ours)
        names = self.schedulers
        return frozenset(uid for uid in snapshot.jobs if (row := rows.get(uid)) is not None
                         and row.scheduler_name in names)

    def sharding_for(self, snapshot: ClusterSnapshot, state: LoadedState) -> Sharding | None:
        """The session's Sharding over `snapshot` (built from `state`), the foreign jobs
        classified now; None on an unsharded cluster."""
        if not self.sharded:
            return None
        self.foreign = self.foreign_in(snapshot, state)
        return Sharding(self.mode, self.shard, self.nodes_in_shard, self.scheduler_name, self.foreign)


def resolve(shard: str) -> Instance:
    """Read the NodeShard rows for this cycle (inside its transaction). Raises ShardMissing when
    `shard` names no row."""
    rows = list(NodeShard.objects.values_list("name", "scheduler_name", "mode", "nodes_desired",
                                              "nodes_in_use"))
    if not rows:
        if shard:
            raise ShardMissing(f"no NodeShard named {shard!r}")
        return Instance(shard="", sharded=False)
    schedulers = frozenset(r[1] for r in rows)
    if not shard:
        return Instance(shard="", sharded=True, schedulers=schedulers)
    own = next((r for r in rows if r[0] == shard), None)
    if own is None:
        raise ShardMissing(f"no NodeShard named {shard!r}")
    taken = {name for r in rows if r[0] != shard for name in (r[4] or ())}
    nodes = frozenset(n for n in (own[3] or ()) if n not in taken)
    return Instance(shard=shard, sharded=True, mode=own[2], scheduler_name=own[1], schedulers=schedulers,
                    nodes_in_shard=nodes, in_use=list(own[4] or ()))


def own_state(state: LoadedState, inst: Instance) -> LoadedState:
    """`state` for the job and nomination writes: without the foreign jobs (no reason, phase or
    nomination of theirs is written back). `state` itself when nothing is foreign."""
    if not inst.foreign:
        return state
    foreign = inst.foreign
    # Pipelined task keys are "namespace/job/task": the job's uid is the first two parts.
    pipelined = {uid for uid in state.pipelined if uid.rsplit("/", 1)[0] not in foreign}
    jobs = {uid: row for uid, row in state.jobs.items() if uid not in foreign}
    return replace(state, jobs=jobs, pipelined=pipelined)


def write_in_use(inst: Instance) -> list[str] | None:
    """Set the shard's `nodes_in_use` (after the cycle's task writes, same transaction): its
    nodes plus those holding its in-flight tasks; returns the list written, None when unchanged
    or not a shard's instance."""
    if not inst.shard:
        return None
    cond, params = inst._cond()
    # Ours is the negation of "other instances'" (scheduler_name is never NULL).
    with connection.cursor() as cursor:
        cursor.execute(_IN_FLIGHT_SQL.format(cond=f"NOT (j.{cond})"), params)
        busy = {name for (name,) in cursor.fetchall()}
    in_use = sorted(inst.nodes_in_shard | busy)
    if in_use == sorted(inst.in_use):
        return None
    writes.write_shard_in_use(inst.shard, in_use)
    return in_use
