"""Extension points: the named callable type of every kind of callback, and its fast companions.

Volcano's `api/types.go` names each plugin function type once (`CompareFn`, `ValidateFn`,
`EvictableFn`, `PredicateFn`, `NodeOrderFn`, `VoteFn`, ...); the session's `add_*_fn` methods
(framework/callbacks.py) take these types, and each combined query there states its tier rule.

A *companion* is an optional, faster form of a callback's answer that the plugin declares as a
keyword argument of the registration it accompanies (`add_job_order_fn(name, fn, key_fn=...)`);
`COMPANIONS` lists which registration takes which. A companion must agree with its primary
callback, which one shared property test checks for every plugin (tests/scheduler_core/framework/
test_companions.py; signatures in test_signatures.py). A plugin that declares none is only slower.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import numpy as np

from scheduler_core.framework.interface import ValidateResult
from scheduler_core.framework.node_table import NodeTable
from scheduler_core.model import JobInfo, QueueInfo, TaskInfo

T = TypeVar("T")

# -- primary callbacks (Volcano's names where Volcano has one) ------------------------------------
# <0 when l goes first, >0 when r does, 0 = no opinion (the next plugin decides).
CompareFn: TypeAlias = Callable[[T, T], int]
JobOrderFn: TypeAlias = CompareFn[JobInfo]
QueueOrderFn: TypeAlias = CompareFn[QueueInfo]
TaskOrderFn: TypeAlias = CompareFn[TaskInfo]
NamespaceOrderFn: TypeAlias = CompareFn[str]
# (l, r, preemptor's queue) -> <0 when victims are taken from l first.
VictimCompareFn: TypeAlias = Callable[[QueueInfo, QueueInfo, QueueInfo], int]
# (task, table) -> the failing rows, each mask with its Volcano-style reason (vectorised).
PredicateFn: TypeAlias = Callable[[TaskInfo, NodeTable], list[tuple[str, np.ndarray]]]
# (task, table, mask) -> one float score per table row; rows outside the mask may be anything.
NodeOrderFn: TypeAlias = Callable[[TaskInfo, NodeTable, np.ndarray], np.ndarray]
BatchNodeOrderFn: TypeAlias = NodeOrderFn
# (actor, candidates) -> (victims among candidates, vote): vote 0 abstains.
EvictableFn: TypeAlias = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
# () -> tasks the plugin wants evicted (rescheduling).
VictimTasksFn: TypeAlias = Callable[[], list[TaskInfo]]
# A yes/no about one object: job ready, job starving, queue overused.
ValidateFn: TypeAlias = Callable[[T], bool]
# A failing ValidateResult (or None / a passing one): job valid (Volcano's ValidateExFn).
ValidateExFn: TypeAlias = Callable[[JobInfo], ValidateResult | None]
# (queue, task) -> may the queue take (allocatable) or reclaim for (preemptive) the task.
AllocatableFn: TypeAlias = Callable[[QueueInfo, TaskInfo], bool]
# +1 permit, 0 abstain, -1 reject: job enqueueable, job pipelined.
VoteFn: TypeAlias = Callable[[JobInfo], int]
# Told that a job was admitted to Inqueue.
JobEnqueuedFn: TypeAlias = Callable[[JobInfo], None]

# -- companions --------------------------------------------------------------------------------
# item -> sort key: sorting by it gives the order fn's comparisons (key(l) < key(r) iff fn(l, r) < 0).
OrderKeyFn: TypeAlias = Callable[[T], Any]
# (task, row) -> the node-order fn's score of that row of the session's full table scored alone
# (a one-row mask), in plain floats.
RowScoreFn: TypeAlias = Callable[[TaskInfo, int], float]
# job -> False promises none of the job's tasks is ever among the evictable fn's victims (while
# the job's tasks keep their statuses), and that the fn never abstains.
VictimJobFilterFn: TypeAlias = Callable[[JobInfo], bool]

# -- facets of a predicate: what callers other than allocate ask of it ------------------------------
# Volcano's preempt asks the session, not a plugin, which failures are UnschedulableAndUnresolvable
# (PredicateForPreemptAction) and for a simulated predicate (SimulatePredicateFn): a predicate
# plugin declares these parts of its answer with its registration (`add_predicate_fn(facets=)`).
# (task, row, table) -> the first failure eviction could fix on the row, the Releasing tasks
# counted as gone, or None.
RowFailureFn: TypeAlias = Callable[[TaskInfo, int, NodeTable], str | None]
# (task, row, gone) -> required inter-pod (anti-)affinity violated on the row once the tasks
# `gone(task)` says left are taken away (topology-aware preemption's dry runs).
InterPodFn: TypeAlias = Callable[[TaskInfo, int, Callable[[TaskInfo], bool]], bool]


@dataclass(frozen=True, slots=True)
class PredicateFacets:
    """Parts of a predicate plugin's answer, each optional (None: the caller does without).

    `unresolvable(task, table)`: the failures no eviction can fix (preempt and reclaim keep the
    other rows as candidates; without it every failure of the predicate counts);
    `row_failure`: the one-row re-check of the fixable ones after a tentative eviction (asked only
    of a predicate that declares `unresolvable`); `node_facts(task, table)`: the failures from
    node facts alone (unschedulable, labels, taints: nothing finishing changes them; the
    never-fits explanation); `inter_pod`: topology-aware preemption's simulated affinity test.
    """

    unresolvable: PredicateFn | None = None
    row_failure: RowFailureFn | None = None
    node_facts: PredicateFn | None = None
    inter_pod: InterPodFn | None = None


# -- the switches and companions of each kind ----------------------------------------------------
# Kind -> the conf switch that gates it (docs/semantics.md section 3; None = never gated).
KIND_FLAG: dict[str, str | None] = {
    "job_order": "enabledJobOrder",
    "queue_order": "enabledQueueOrder",
    "victim_queue_order": "enabledQueueOrder",
    "task_order": "enabledTaskOrder",
    "namespace_order": "enabledNamespaceOrder",
    "predicate": "enabledPredicate",
    "node_order": "enabledNodeOrder",
    "batch_node_order": "enabledNodeOrder",
    "preemptable": "enabledPreemptable",
    "reclaimable": "enabledReclaimable",
    "victim_tasks": "enabledVictim",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "preemptive": "enablePreemptive",
    "job_ready": "enabledJobReady",
    "job_pipelined": "enabledJobPipelined",
    "job_valid": None,
    "job_enqueueable": "enabledJobEnqueued",
    "job_enqueued": "enabledJobEnqueued",
    "job_starving": "enabledJobStarving",
}

# Kinds whose answers allocate caches per class of tasks (see framework.signature).
PLACEMENT_KINDS = ("predicate", "node_order", "batch_node_order")

# Registration kind -> the companion keywords its add_*_fn accepts. `static` (predicate): the
# answer depends only on task.sched_key and node facts fixed within a session, so it is cached.
# `signature` (framework.signature): the task fields the answer reads.
COMPANIONS: dict[str, tuple[str, ...]] = {
    "job_order": ("key_fn",),
    "queue_order": ("key_fn",),
    "predicate": ("static", "signature"),
    "node_order": ("row_fn", "signature"),
    "batch_node_order": ("row_fn", "signature"),
    "preemptable": ("victim_job_filter",),
    "reclaimable": ("victim_job_filter",),
}
