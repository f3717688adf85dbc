"""Callback registry of the session and the rules that combine plugin answers across tiers.

Semantics page section 4. Plugins are asked in tier order, then plugin order, skipping plugins
whose extension-point switch is off. Each plugin registers at most one callback per kind
(a second registration replaces the first, and its companions, like Volcano's maps keyed by
plugin name). Callback types and companions: framework/extension_points.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from scheduler_core.framework.conf import Tier
from scheduler_core.framework.extension_points import (
    COMPANIONS,
    KIND_FLAG,
    PLACEMENT_KINDS,
    AllocatableFn,
    BatchNodeOrderFn,
    EvictableFn,
    JobEnqueuedFn,
    JobOrderFn,
    NamespaceOrderFn,
    NodeOrderFn,
    OrderKeyFn,
    PredicateFacets,
    PredicateFn,
    QueueOrderFn,
    RowScoreFn,
    TaskOrderFn,
    ValidateExFn,
    ValidateFn,
    VictimCompareFn,
    VictimJobFilterFn,
    VictimTasksFn,
    VoteFn,
)
from scheduler_core.framework.interface import EventHandler, ValidateResult
from scheduler_core.framework.order_keys import STATIC_KEY, OrderKeys, StaticKeyFn
from scheduler_core.framework.task_fallback import compare_task

if TYPE_CHECKING:
    from scheduler_core.framework.signature import Signature
    from scheduler_core.model import JobInfo, QueueInfo, TaskInfo

__all__ = ["ALLOCATABLE_COUNT", "KIND_FLAG", "PLACEMENT_KINDS", "STATIC_KEY", "AllocatableCountFn",
           "CallbackRegistry", "StaticKeyFn"]

# (queue, task, k_max) -> the largest k <= k_max such that the queue's allocatable fn says yes
# before each of k copies of the task placed one after another (each copy's allocate event
# fired): allocate's runs of identical tasks. Pure: it records nothing.
AllocatableCountFn: TypeAlias = Callable[["QueueInfo", "TaskInfo", int], int]
# The allocatable registration's companion keyword (its place is extension_points.COMPANIONS).
ALLOCATABLE_COUNT = "count_fn"
_COMPANIONS: dict[str, tuple[str, ...]] = {**COMPANIONS, "allocatable": (ALLOCATABLE_COUNT,),
                                           "queue_order": (*COMPANIONS["queue_order"], STATIC_KEY)}


NO_FACETS = PredicateFacets()


def _fallback(l_created: float, r_created: float, l_name: str, r_name: str) -> int:
    """Creation time, then name: never a random tie."""
    if l_created != r_created:
        return -1 if l_created < r_created else 1
    if l_name != r_name:
        return -1 if l_name < r_name else 1
    return 0


class CallbackRegistry(OrderKeys):
    """Registration (`add_*_fn(name, fn)`) and combined queries; the Session inherits this."""

    tiers: list[Tier]

    def _init_callbacks(self, tiers: list[Tier]) -> None:
        self.tiers = tiers
        self._fns: dict[str, dict[str, Any]] = {kind: {} for kind in KIND_FLAG}
        self._tier_cache: dict[str, list[list[tuple[str, Any]]]] = {}
        self._flat_cache: dict[str, list[tuple[str, Any]]] = {}
        # Answers derived from the registrations (row fns, composite order keys): rebuilt on demand
        # after any registration.
        self._derived: dict[str, Any] = {}
        self.event_handlers: list[EventHandler] = []
        # Companions declared with each registration (extension_points.COMPANIONS): kind ->
        # plugin -> {keyword: value}; a re-registration replaces them with its own.
        self._companions: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in _COMPANIONS}
        # Facets declared with each predicate (extension_points.PredicateFacets), by plugin.
        self._facets: dict[str, PredicateFacets] = {}

    # -- registration ------------------------------------------------------------------------
    def _add(self, kind: str, name: str, fn: Any, **companions: Any) -> None:
        self._fns[kind][name] = fn
        if kind in _COMPANIONS:
            self._companions[kind][name] = companions
        self._tier_cache.pop(kind, None)
        self._flat_cache.pop(kind, None)
        self._derived.clear()

    def companion(self, kind: str, name: str, keyword: str) -> Any:
        """What plugin `name` declared as `keyword` with its `kind` registration (None if nothing)."""
        return self._companions.get(kind, {}).get(name, {}).get(keyword)

    def add_job_order_fn(self, name: str, fn: JobOrderFn,
                         key_fn: OrderKeyFn[JobInfo] | None = None) -> None:
        """Job order: <0 when l goes first.

        `key_fn(job)`, when given, must agree with `fn`: `fn(l, r)` has the sign of comparing
        `key_fn(l)` with `key_fn(r)` (so sorting by the key gives the comparator's order).
        """
        self._add("job_order", name, fn, key_fn=key_fn)

    def add_queue_order_fn(self, name: str, fn: QueueOrderFn,
                           key_fn: OrderKeyFn[QueueInfo] | None = None,
                           static_key_fn: StaticKeyFn | None = None) -> None:
        """Queue order: <0 when l goes first (`key_fn` as for job order).

        `static_key_fn(queues, moving=False)`, when given, returns a key that agrees with `fn` over
        those queues as long as the plugin's figures do not move (with `moving`: also while
        allocations move them, each queue re-keyed when pushed back), or None when it has none
        for them (`queue_order_static_key`).
        """
        self._add("queue_order", name, fn, key_fn=key_fn, static_key_fn=static_key_fn)

    def add_victim_queue_order_fn(self, name: str, fn: VictimCompareFn) -> None:
        """Victim queue order (l, r, preemptor queue): <0 when l is taken from first."""
        self._add("victim_queue_order", name, fn)

    def add_task_order_fn(self, name: str, fn: TaskOrderFn) -> None:
        """Task order: <0 when l goes first."""
        self._add("task_order", name, fn)

    def add_namespace_order_fn(self, name: str, fn: NamespaceOrderFn) -> None:
        """Namespace order: <0 when l goes first."""
        self._add("namespace_order", name, fn)

    def add_predicate_fn(self, name: str, fn: PredicateFn, static: bool = False, *,
                         signature: Signature | None = None, facets: PredicateFacets | None = None) -> None:
        """Predicate `(task, table) -> [(reason, failing_mask)]`.

        `static=True` promises the answer depends only on `task.sched_key` and on node facts
        that do not change within a session (labels, taints, unschedulable): it is cached.
        `signature` names the task fields the answer reads (framework.signature); None: cannot sign.
        `facets`: the parts of the answer preempt, reclaim and the explanations ask for
        (extension_points.PredicateFacets); None: none declared.
        """
        self._add("predicate", name, (fn, static), static=static, signature=signature)
        self._facets[name] = facets or NO_FACETS

    def predicate_facets(self) -> list[tuple[str, PredicateFn, PredicateFacets]]:
        """(plugin, predicate, its facets) of every enabled predicate, tier then plugin order;
        a plugin that declared none has `NO_FACETS` (every field None)."""
        hit = self._derived.get("facets")
        if hit is None:
            hit = self._derived["facets"] = [(name, fn, self._facets.get(name, NO_FACETS))
                                             for name, (fn, _) in self._flat("predicate")]
        return hit

    def add_node_order_fn(self, name: str, fn: NodeOrderFn, row_fn: RowScoreFn | None = None, *,
                          signature: Signature | None = None) -> None:
        """Node scores `(task, table, mask) -> float array` (row-aligned); summed over plugins.

        `row_fn(task, row) -> float`, when given, must equal `fn`'s score of that row of the
        session's full table scored alone (a one-row mask); it serves the re-score after a placement.
        `signature` as for predicates.
        """
        self._add("node_order", name, fn, row_fn=row_fn, signature=signature)

    def add_batch_node_order_fn(self, name: str, fn: BatchNodeOrderFn, row_fn: RowScoreFn | None = None,
                                *, signature: Signature | None = None) -> None:
        """Batch node scores, same signature as node order; added on top (`row_fn`, `signature` as above)."""
        self._add("batch_node_order", name, fn, row_fn=row_fn, signature=signature)

    def placement_signatures(self) -> list[tuple[str, str, Signature | None]]:
        """(kind, plugin, signature) of every enabled predicate / node-order / batch callback."""
        return [(kind, name, self.companion(kind, name, "signature"))
                for kind in PLACEMENT_KINDS for name, _ in self._flat(kind)]

    def row_score_fns(self) -> list[tuple[str, RowScoreFn | None]]:
        """Enabled node-order then batch-node-order callbacks as (plugin, row_fn or None)."""
        hit = self._derived.get("row_fn")
        if hit is None:
            hit = [(name, self.companion(kind, name, "row_fn"))
                   for kind in ("node_order", "batch_node_order") for name, _ in self._flat(kind)]
            self._derived["row_fn"] = hit
        return hit

    def add_preemptable_fn(self, name: str, fn: EvictableFn, *,
                           victim_job_filter: VictimJobFilterFn | None = None) -> None:
        """Victims `(preemptor, preemptees) -> (victims, vote)`; vote 0 = abstain.

        `victim_job_filter(job)` False, when given, promises none of the job's tasks is among
        `fn`'s victims while they keep their statuses, and `fn` never abstains (victim pruning).
        """
        self._add("preemptable", name, fn, victim_job_filter=victim_job_filter)

    def add_reclaimable_fn(self, name: str, fn: EvictableFn, *,
                           victim_job_filter: VictimJobFilterFn | None = None) -> None:
        """Victims `(reclaimer, reclaimees) -> (victims, vote)`; vote 0 = abstain (filter as above)."""
        self._add("reclaimable", name, fn, victim_job_filter=victim_job_filter)

    def add_victim_tasks_fn(self, name: str, fn: VictimTasksFn) -> None:
        """Tasks a plugin wants evicted (rescheduling); answers are united."""
        self._add("victim_tasks", name, fn)

    def add_overused_fn(self, name: str, fn: ValidateFn[QueueInfo]) -> None:
        """Queue overused: any yes makes it overused."""
        self._add("overused", name, fn)

    def add_allocatable_fn(self, name: str, fn: AllocatableFn,
                           count_fn: AllocatableCountFn | None = None) -> None:
        """Queue may take the task: every plugin must say yes.

        `count_fn(queue, task, k_max)`, when given, answers `allocatable_count` for this plugin
        (how many copies in a row it allows; see AllocatableCountFn); without it the plugin
        allows runs of one task.
        """
        self._add("allocatable", name, fn, count_fn=count_fn)

    def add_preemptive_fn(self, name: str, fn: AllocatableFn) -> None:
        """Queue may reclaim for the task: every plugin must say yes."""
        self._add("preemptive", name, fn)

    def add_job_ready_fn(self, name: str, fn: ValidateFn[JobInfo]) -> None:
        """Job ready to bind: every plugin must say yes."""
        self._add("job_ready", name, fn)

    def add_job_pipelined_fn(self, name: str, fn: VoteFn) -> None:
        """Job pipelined vote (+1 permit, 0 abstain, -1 reject)."""
        self._add("job_pipelined", name, fn)

    def add_job_valid_fn(self, name: str, fn: ValidateExFn) -> None:
        """Job validity; a failing ValidateResult leaves the job out of all actions."""
        self._add("job_valid", name, fn)

    def add_job_enqueueable_fn(self, name: str, fn: VoteFn) -> None:
        """Job enqueueable vote (+1 permit, 0 abstain, -1 reject)."""
        self._add("job_enqueueable", name, fn)

    def add_job_enqueued_fn(self, name: str, fn: JobEnqueuedFn) -> None:
        """Called after a job is admitted to Inqueue (reserve its resources)."""
        self._add("job_enqueued", name, fn)

    def add_job_starving_fn(self, name: str, fn: ValidateFn[JobInfo]) -> None:
        """Job starving; the first tier with such functions decides."""
        self._add("job_starving", name, fn)

    def add_event_handler(self, handler: EventHandler) -> None:
        """Allocate/deallocate hooks, fired for every plugin regardless of switches."""
        self.event_handlers.append(handler)

    # -- lookup ------------------------------------------------------------------------------
    def enabled_fns(self, kind: str) -> list[list[tuple[str, Any]]]:
        """Per tier, the (plugin, callback) pairs of `kind` whose switch is on, in order."""
        hit = self._tier_cache.get(kind)
        if hit is not None:
            return hit
        fns, flag = self._fns[kind], KIND_FLAG[kind]
        out = []
        for tier in self.tiers:
            out.append([(p.name, fns[p.name]) for p in tier.plugins
                        if p.name in fns and (flag is None or p.enabled(flag))])
        self._tier_cache[kind] = out
        return out

    def _flat(self, kind: str) -> list[tuple[str, Any]]:
        hit = self._flat_cache.get(kind)
        if hit is None:
            hit = self._flat_cache[kind] = [pair for tier in self.enabled_fns(kind) for pair in tier]
        return hit

    def _first_nonzero(self, kind: str, *args: Any) -> int:
        # The order rule: across tiers, then plugins, the first non-zero comparison wins.
        for _, fn in self._flat(kind):
            j = fn(*args)
            if j != 0:
                return j
        return 0

    # -- orders ------------------------------------------------------------------------------
    def job_compare(self, lhs: JobInfo, rhs: JobInfo) -> int:
        """<0 when lhs goes first. Rule: the first non-zero plugin answer (tier, then plugin
        order) wins; all zero: earlier creation time, then uid."""
        return (self._first_nonzero("job_order", lhs, rhs)
                or _fallback(lhs.created, rhs.created, lhs.uid, rhs.uid))

    def job_order_fn(self, lhs: JobInfo, rhs: JobInfo) -> bool:
        """True when job lhs goes before rhs."""
        return self.job_compare(lhs, rhs) < 0

    def queue_compare(self, lhs: QueueInfo, rhs: QueueInfo) -> int:
        """<0 when lhs goes first. Rule: the first non-zero plugin answer wins; all zero:
        earlier creation time, then name."""
        return (self._first_nonzero("queue_order", lhs, rhs)
                or _fallback(lhs.created, rhs.created, lhs.name, rhs.name))

    def queue_order_fn(self, lhs: QueueInfo, rhs: QueueInfo) -> bool:
        """True when queue lhs goes before rhs."""
        return self.queue_compare(lhs, rhs) < 0

    def victim_queue_compare(self, lhs: QueueInfo, rhs: QueueInfo, preemptor_queue: QueueInfo) -> int:
        """<0 when victims are taken from lhs first (Volcano's VictimQueueOrderFn).

        Rule: the first non-zero victim-queue-order answer wins; all zero: the
        queue that would be served last gives first: the reverse of the full queue order
        (queue-order plugins such as priority and share, then creation time and name).
        """
        return (self._first_nonzero("victim_queue_order", lhs, rhs, preemptor_queue)
                or -self.queue_compare(lhs, rhs))

    def victim_queue_order_fn(self, lhs: QueueInfo, rhs: QueueInfo, preemptor_queue: QueueInfo) -> bool:
        """True when victims are taken from queue lhs before rhs."""
        return self.victim_queue_compare(lhs, rhs, preemptor_queue) < 0

    def task_compare(self, lhs: TaskInfo, rhs: TaskInfo) -> int:
        """<0 when lhs goes first. Rule: the first non-zero plugin answer wins; all zero:
        Volcano's CompareTask (`task_fallback`: name index, creation time, uid)."""
        return self._first_nonzero("task_order", lhs, rhs) or compare_task(lhs, rhs)

    def task_order_fn(self, lhs: TaskInfo, rhs: TaskInfo) -> bool:
        """True when task lhs goes before rhs."""
        return self.task_compare(lhs, rhs) < 0

    def namespace_compare(self, lhs: str, rhs: str) -> int:
        """<0 when namespace lhs goes first. Rule: the first non-zero plugin answer wins; all
        zero: by name."""
        j = self._first_nonzero("namespace_order", lhs, rhs)
        if j:
            return j
        return (lhs > rhs) - (lhs < rhs)

    def namespace_order_fn(self, lhs: str, rhs: str) -> bool:
        """True when namespace lhs goes before rhs."""
        return self.namespace_compare(lhs, rhs) < 0

    # -- all / any ---------------------------------------------------------------------------
    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May the queue take the task? Rule: all: every enabled plugin of every tier says yes
        (none registered: yes)."""
        return all(fn(queue, task) for _, fn in self._flat("allocatable"))

    def allocatable_count(self, queue: QueueInfo, task: TaskInfo, k_max: int) -> int:
        """How many copies of the task, placed one after another, the queue may take: the largest
        k <= k_max with `allocatable(queue, task)` yes before each copy. Rule: the minimum over
        the enabled plugins' `count_fn`; a plugin without one allows at most 1 (its fn is asked
        as `allocatable` asks it); none registered: k_max."""
        k = k_max
        for name, fn in self._flat("allocatable"):
            count = self.companion("allocatable", name, ALLOCATABLE_COUNT)
            if count is not None:
                k = min(k, count(queue, task, k))
            elif fn(queue, task):
                k = min(k, 1)
            else:
                return 0
            if k <= 0:
                return 0
        return k

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May the queue reclaim for the task? Rule: all (every enabled plugin; none: yes)."""
        return all(fn(queue, task) for _, fn in self._flat("preemptive"))

    def job_ready(self, job: JobInfo) -> bool:
        """Is the job ready to bind? Rule: all (every enabled plugin; none: yes)."""
        return all(fn(job) for _, fn in self._flat("job_ready"))

    def overused(self, queue: QueueInfo) -> bool:
        """Is the queue overused? Rule: any: one enabled plugin saying yes suffices (none: no)."""
        return any(fn(queue) for _, fn in self._flat("overused"))

    # -- votes -------------------------------------------------------------------------------
    def _vote(self, kind: str, job: JobInfo) -> bool:
        # Tiers in order: a reject (-1) says no at once; a permit (+1) decides yes at the end of
        # its tier (later tiers are not asked); a tier of abstainers (0) passes on; none: yes.
        for tier in self.enabled_fns(kind):
            permit = False
            for _, fn in tier:
                v = fn(job)
                if v < 0:
                    return False
                if v > 0:
                    permit = True
            if permit:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        """May the job count as pipelined? Rule: vote (a reject anywhere says no; the first tier
        with a permit and no reject says yes; no permit anywhere: yes)."""
        return self._vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """May the job enter Inqueue? Rule: vote, as job_pipelined."""
        return self._vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        """Tell the plugins a job was admitted. Rule: every enabled plugin, tier order."""
        for _, fn in self._flat("job_enqueued"):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Is the job starving? Rule: the first tier with starving callbacks decides (all of
        them must say yes); no callbacks anywhere: no."""
        for tier in self.enabled_fns("job_starving"):
            if tier:
                return all(fn(job) for _, fn in tier)
        return False

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """The first failing ValidateResult, or None when the job is valid. Rule: first failure
        in tier, then plugin order; switches do not apply (job validity is never gated)."""
        for _, fn in self._flat("job_valid"):
            res = fn(job)
            if res is not None and not res.passed:
                return res
        return None

    # -- victims -----------------------------------------------------------------------------
    def _victims(self, kind: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        # Within a tier: abstainers skipped, an empty answer empties the tier, else intersect.
        # The first tier where some plugin answered decides.
        for tier in self.enabled_fns(kind):
            answered = False
            victims: list[TaskInfo] = []
            for _, fn in tier:
                chosen, vote = fn(actor, candidates)
                if vote == 0:
                    continue
                if not answered:
                    answered, victims = True, list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [t for t in victims if t.uid in keep]
                if not victims:
                    break
            if answered:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, preemptees: list[TaskInfo]) -> list[TaskInfo]:
        """Victims the preemptor may evict. Rule: the first tier where some plugin does not
        abstain decides; its answer is the intersection of its answers (in the first answer's
        order; one empty answer empties it); every tier abstains: none."""
        return self._victims("preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> list[TaskInfo]:
        """Victims the reclaimer may evict. Rule: as preemptable (first answering tier decides,
        intersection within it)."""
        return self._victims("reclaimable", reclaimer, reclaimees)

    def victim_tasks(self) -> list[TaskInfo]:
        """Tasks to evict. Rule: union of every enabled plugin's answer, first occurrence order."""
        seen: dict[str, TaskInfo] = {}
        for _, fn in self._flat("victim_tasks"):
            for t in fn():
                seen.setdefault(t.uid, t)
        return list(seen.values())

    # -- victim pruning (optional hooks; actions use them to skip nodes, never to decide) -------
    def add_victim_job_filter_fn(self, kind: str, name: str, fn: VictimJobFilterFn) -> None:
        """Declare `fn` as the `victim_job_filter` of plugin `name`'s registered `kind`
        ("preemptable"/"reclaimable") callback, after the fact (plugins pass it to add_*_fn)."""
        self._companions[kind].setdefault(name, {})["victim_job_filter"] = fn
        self._derived.clear()

    def victim_job_filters(self, kind: str) -> list[VictimJobFilterFn] | None:
        """Filters bounding the `kind` victims: a victim's job passes all of them.

        They are the filters of the first tier with enabled `kind` callbacks (that tier decides,
        since filtered callbacks never abstain); None when that tier has no filter (no bound);
        `[]`-like "never" (one filter saying False) when no tier has callbacks (no victims).
        """
        for tier in self.enabled_fns(kind):
            if not tier:
                continue
            found = [f for name, _ in tier if (f := self.companion(kind, name, "victim_job_filter"))]
            return found or None
        return [_never]


def _never(job: JobInfo) -> bool:
    """No job gives victims (no plugin offers any)."""
    return False
