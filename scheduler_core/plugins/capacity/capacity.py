"""capacity: deserved from the queue spec, flat or hierarchical (docs/semantics.md section 6).

Attributes come from capacity_tree (`enableHierarchy` on the plugin option picks the tree).
Extension points: queue order (priority; then share, queues with deserved before best-effort
ones on ties; with hierarchy, leaves first and two leaves compared at the children of their
common ancestor), victim queue order (hierarchy: queues sharing a deeper ancestor with the
preemptor first), reclaimable (shared dimensions with the reclaimer, guarantee kept, then
immediate victim when the reclaimee uses no deserved dimension, else the queue must exceed its
deserved in one of the reclaimee's dimensions), preemptive (some requested dimension still
under deserved), allocatable (Open, leaf, allocated + request <= real capability on the
requested dimensions at every level, leaf to root; with a count of copies in a row), job
enqueueable (the same chain with
min_req + allocated + inqueue - elastic), job enqueued (inqueue to the leaf and ancestors),
job valid (hierarchy: leaf queues only), events (allocated to the leaf and ancestors: O(depth)).
Argument `ancestorReclaimLevel` (hierarchy only, default 0): reclaim also looks at the
ancestors 1..N levels up (`capacity_reclaim`); flat queues ignore it with a warning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Event, EventHandler, Plugin, ValidateResult
from scheduler_core.framework.records import refusal as queue_refusal
from scheduler_core.model import JobInfo, QueueInfo, QueueState, TaskInfo
from scheduler_core.plugins.capacity import reclaim as capacity_reclaim
from scheduler_core.plugins.capacity.kept_tree import KeptTree
from scheduler_core.plugins.capacity.order import static_key
from scheduler_core.plugins.capacity.tree import CapacityTree, build_flat, build_hierarchy, queue_level
from scheduler_core.plugins.capacity.verdicts import MISSING, ChainMemos
from scheduler_core.plugins.util.queue_attr import (
    SHARE_FIELDS,
    QueueAttr,
    ReasonMemo,
    copies_within,
    figures,
    over_dimensions,
    quota_message,
    shape,
    update_share,
)
from scheduler_core.plugins.util.votes import ABSTAIN, PERMIT, REJECT
from scheduler_core.resources import Resource

if TYPE_CHECKING:
    from scheduler_core.framework.conf import PluginOption
    from scheduler_core.framework.session import Session


class CapacityPlugin(Plugin):
    """Queue quotas from the spec: deserved, capability, guarantee; optionally a queue tree."""

    name = "capacity"

    limit_figure = "real_capability"
    ceiling_figures = ("real_capability",)
    explanation_form = "configured-deserved"

    @classmethod
    def check_arguments(cls, arguments: dict[str, Any]) -> list[str]:
        """`ancestorReclaimLevel` must be a whole number >= 0 (capacity_reclaim.parse_level)."""
        try:
            capacity_reclaim.parse_level(arguments)
        except ValueError as exc:
            return [str(exc)]
        return []

    @classmethod
    def ignored_queue_fields(cls, option: PluginOption, *, is_leaf: bool) -> dict[str, str] | None:
        """Weight never counts (shares by deserved); without enableHierarchy a parent plays no part."""
        weight = ("The active configuration uses the capacity plugin, which shares by deserved: weight has "
                  "no effect.")
        if option.enabled("enableHierarchy") or is_leaf:
            return {"weight": weight}
        why = ("The active configuration uses the capacity plugin without enableHierarchy, which treats "
               "queues as flat: a parent queue's {field} has no effect.")
        return {f: why.format(field=f) for f in SHARE_FIELDS}

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.tree = CapacityTree()
        self.queue_opts: dict[str, QueueAttr] = {}
        self._opened: dict[str, Resource] = {}
        self._chains: dict[str, list[QueueAttr]] = {}
        self._pairs: dict[tuple[str, str], Any] = {}
        # Verdicts, chain details and allocatable's refusals, valid while their queues do not
        # move (verdicts.py); kept across sessions with the kept tree.
        self._memos = ChainMemos()
        self._moved = self._memos.moves.moved
        # Per queue name: _refusal's answer (queue state and tree are fixed within a session).
        self._refusals: dict[str, tuple[str, str] | None] = {}
        # Validated by parse_conf; a plugin built by hand with a bad value fails here alike.
        self.ancestor_level = capacity_reclaim.parse_level(self.arguments)

    @property
    def hierarchy(self) -> bool:
        """Whether the hierarchical tree is in use."""
        return self.tree.hierarchy

    def on_session_open(self, ssn: Session) -> None:
        """Build the attrs (flat or tree), surface configuration warnings, register callbacks."""
        opt = ssn.plugin_option(self.name)
        hierarchy = bool(opt is not None and opt.enabled("enableHierarchy"))
        if hierarchy and ssn.kept is not None:
            # The tree and the memos live with the snapshot's kept state (kept_tree.py).
            kept = ssn.kept.part("capacity.tree", KeptTree)
            self.tree, self._memos = kept.open(ssn), kept.memos
        else:
            self.tree = build_hierarchy(ssn) if hierarchy else build_flat(ssn)
            self._memos = ChainMemos()
        self.queue_opts = self.tree.attrs
        self._moved = self._memos.moves.moved
        self._chains = {}
        self._refusals = {}
        self._pairs = {}
        self._opened = {n: a.deserved.clone() for n, a in self.queue_opts.items()}
        for w in self.tree.warnings:
            ssn.result.warn(w)
        self.level = self.ancestor_level if hierarchy else 0
        if self.ancestor_level and not hierarchy:
            ssn.result.warn("capacity: ancestorReclaimLevel is ignored without enableHierarchy")
        self.ssn = ssn
        self.memo = ReasonMemo(ssn, self.name)
        ssn.add_queue_order_fn(self.name, self.queue_order,
                               static_key_fn=lambda queues, moving=False: static_key(
                                   self.queue_opts, hierarchy, queues, moving))
        ssn.add_reclaimable_fn(self.name, self.reclaimable)
        ssn.add_preemptive_fn(self.name, self.preemptive)
        ssn.add_allocatable_fn(self.name, self.allocatable, count_fn=self.allocatable_count)
        ssn.add_job_enqueueable_fn(self.name, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        if hierarchy:
            ssn.add_victim_queue_order_fn(self.name, self.victim_queue_order)
            ssn.add_job_valid_fn(self.name, self.job_valid)
        ssn.add_event_handler(EventHandler(allocate_func=self.on_allocate,
                                           deallocate_func=self.on_deallocate,
                                           allocate_batch_func=self.on_allocate_run))

    # -- orders ---------------------------------------------------------------------------------
    def queue_order(self, lhs: QueueInfo, rhs: QueueInfo) -> int:
        """Priority, then share at the right level of the tree."""
        if lhs.priority != rhs.priority:
            return -1 if lhs.priority > rhs.priority else 1
        # The heaps compare the same pairs many times: which attrs decide a pair, and the answer
        # on equal shares, are fixed for the session (tree and deserved do not move); only the
        # shares are read each time.
        pair = self._pairs.get((lhs.name, rhs.name))
        if pair is None:
            pair = self._pairs[(lhs.name, rhs.name)] = self._pair(lhs.name, rhs.name)
        if pair.__class__ is int:
            return pair
        lp, rp, tie = pair
        ls, rs = lp.share, rp.share
        if ls == rs:
            return tie
        return -1 if ls < rs else 1

    def _pair(self, lhs: str, rhs: str) -> int | tuple[QueueAttr, QueueAttr, int]:
        """What decides queue_order between two queues of equal priority: a fixed answer, or the
        two attrs whose shares are compared with the answer on equal shares."""
        la, ra = self.queue_opts.get(lhs), self.queue_opts.get(rhs)
        if la is None or ra is None:
            return 0
        if self.hierarchy:
            l_leaf, r_leaf = not la.children, not ra.children
            if l_leaf != r_leaf:
                return -1 if l_leaf else 1
            if l_leaf:
                level = queue_level(la, ra)
                la = self.queue_opts[la.ancestors[level + 1]] if level + 1 < len(la.ancestors) else la
                ra = self.queue_opts[ra.ancestors[level + 1]] if level + 1 < len(ra.ancestors) else ra
        l_has, r_has = not la.deserved.is_empty(), not ra.deserved.is_empty()
        return la, ra, (0 if l_has == r_has else -1 if l_has else 1)

    def victim_queue_order(self, lhs: QueueInfo, rhs: QueueInfo, preemptor: QueueInfo) -> int:
        """Queues closer to the preemptor in the tree (deeper common ancestor) give first."""
        la, ra, pa = (self.queue_opts.get(q.name) for q in (lhs, rhs, preemptor))
        if la is None or ra is None or pa is None:
            return 0
        l_level, r_level = queue_level(la, pa), queue_level(ra, pa)
        if l_level == r_level:
            return 0
        return -1 if l_level > r_level else 1

    # -- validity -------------------------------------------------------------------------------
    def _refusal(self, queue: QueueInfo) -> tuple[str, str] | None:
        """(code, message) when the queue cannot take work at all, else None (memoised per queue:
        its state and the tree do not change within a session)."""
        name = queue.name
        if name in self._refusals:
            return self._refusals[name]
        got = self._refusals[name] = self._refusal_of(queue)
        return got

    def _refusal_of(self, queue: QueueInfo) -> tuple[str, str] | None:
        if queue.state is not QueueState.OPEN:
            return "QueueClosed", f"queue {queue.name} is {queue.state.value.lower()}"
        broken = self.tree.broken.get(queue.name)
        if broken is not None:
            return "InvalidJob", broken
        attr = self.queue_opts.get(queue.name)
        if self.hierarchy and attr is not None and attr.children:
            kids = ", ".join(sorted(attr.children))
            return "InvalidJob", (f"queue {queue.name} is not a leaf queue: jobs may only be submitted "
                                  f"to leaf queues (its children: {kids})")
        return None

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        """With hierarchy, a job must sit in a leaf queue that is not under a cycle."""
        queue = self.ssn.queues.get(job.queue)
        if queue is None:
            return None
        refusal = self._refusal(queue)
        if refusal is None or refusal[0] != "InvalidJob":
            return None
        self.memo.record(job.uid, "InvalidJob", refusal[1], {"queue": queue.name})
        return ValidateResult(False, "InvalidJob", refusal[1])

    # -- quota checks ---------------------------------------------------------------------------
    def _chain(self, name: str) -> list[QueueAttr]:
        """root .. queue attrs (cached: the tree does not change within a session)."""
        chain = self._chains.get(name)
        if chain is None:
            attr = self.queue_opts[name]
            chain = self._chains[name] = [*(self.queue_opts[a] for a in attr.ancestors), attr]
        return chain

    def _details(self, chain: list[QueueAttr], failed: QueueAttr, with_inqueue: bool) -> dict[str, Any]:
        """The record's chain details (a dict of its own; the chain list is shared, read-only).

        Memoised while no queue of the chain moves (an enqueue, an allocate or deallocate
        event moves its levels): a run of refused jobs of one queue quotes the same figures.
        """
        key = (chain[-1].name, failed.name, with_inqueue)
        hit = self._memos.details.get(key)
        if hit is MISSING:
            hit = self._memos.details.put(key, self._memos.verdicts.names(chain),
                                          self._memos.chain_details(chain, failed, with_inqueue))
        return dict(hit)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """allocated + request <= real capability on the requested dimensions, leaf to root."""
        refusal = self._refusal(queue)
        if refusal is not None:
            self.memo.record(task.job_uid, refusal[0], refusal[1])
            return False
        if queue.name not in self.queue_opts:
            return True
        chain = self._chain(queue.name)
        for attr in reversed(chain):
            names = over_dimensions(attr.allocated, task.resreq, attr.real_capability)
            if names:
                if not self.memo.has(task.job_uid, "QueueOverCapability"):
                    # One record's message and details per (leaf, failed level, request shape)
                    # while no queue of the chain moves, shared read-only.
                    key = (queue.name, attr.name, shape(task.resreq))
                    hit = self._memos.refusals.get(key)
                    if hit is MISSING:
                        left = attr.real_capability.clone().sub_without_assert(attr.allocated)
                        details = self._details(chain, attr, False)
                        details["refusal"] = queue_refusal("allocate", attr.name, "real_capability",
                                                           task.resreq)
                        hit = self._memos.refusals.put(
                            key, (a.name for a in chain),
                            (quota_message(attr.name, names, task.resreq, left), details))
                    self.memo.record(task.job_uid, "QueueOverCapability", hit[0], hit[1])
                return False
        return True

    def allocatable_count(self, queue: QueueInfo, task: TaskInfo, k_max: int) -> int:
        """How many copies of the task in a row `allocatable` lets through (each copy's event adds
        its request at every level): the smallest count over the chain. Records nothing."""
        if self._refusal(queue) is not None:
            return 0
        if queue.name not in self.queue_opts:
            return k_max
        k = k_max
        for attr in reversed(self._chain(queue.name)):
            k = copies_within(attr.allocated, task.resreq, attr.real_capability, k)
            if k == 0:
                break
        return k

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Some requested dimension of allocated + request is still within deserved."""
        if self._refusal(queue) is not None:
            return False
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return True
        return capacity_reclaim.preemptive(self.queue_opts, attr, task, self.level)

    def job_enqueueable(self, job: JobInfo) -> int:
        """min_req + allocated + inqueue - elastic <= real capability at every level (min_req dims)."""
        name = job.queue  # (a logged field: a property call, read once; asked for every waiting job)
        queue = self.ssn.queues.get(name)
        if queue is None:
            return ABSTAIN
        refusal = self._refusals[name] if name in self._refusals else self._refusal(queue)
        if refusal is not None:
            self.memo.record(job.uid, refusal[0], refusal[1])
            return REJECT
        chain = self._chains.get(name)
        if chain is None:
            if name not in self.queue_opts:
                return PERMIT
            chain = self._chain(name)
        if job.min_resources is None:
            return PERMIT
        min_req = job.get_min_resources()
        # The same question (leaf, min_req) has the same answer while the levels it read stand still.
        verdict = self._memos.verdicts.verdict(name, min_req, chain)
        if verdict is None:
            return PERMIT
        attr, message = self.queue_opts[verdict[0]], verdict[1]
        details = self._details(chain, attr, True)
        details["refusal"] = queue_refusal("enqueue", attr.name, "real_capability", min_req)
        self.memo.record(job.uid, "QueueOverCapability", message, details)
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve the job's minimum resources at the leaf and every ancestor."""
        attr = self.queue_opts.get(job.queue)
        if attr is None:
            return
        reserved = job.deducted_min_resources()
        attr.inqueue.add(reserved)
        self._moved(attr.name)
        for anc in attr.ancestors:
            self.queue_opts[anc].inqueue.add(reserved)
            self._moved(anc)

    # -- victims --------------------------------------------------------------------------------
    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """The capacity plugin's triple check on a per-queue simulated allocation (plus ancestor levels)."""
        jobs = self.ssn.jobs
        queue_of = {t.job_uid: jobs[t.job_uid].queue for t in (reclaimer, *reclaimees)}
        victims = capacity_reclaim.reclaimable(self.queue_opts, queue_of, reclaimer, reclaimees, self.level)
        return victims, PERMIT

    # -- events and simulation ------------------------------------------------------------------
    def _levels(self, opts: dict[str, QueueAttr], task: TaskInfo) -> list[QueueAttr]:
        """The task's leaf queue and its ancestors (none when the queue has no attributes)."""
        attr = opts.get(self.ssn.jobs[task.job_uid].queue)
        if attr is None:
            return []
        return [attr] if not attr.ancestors else [attr, *(opts[n] for n in attr.ancestors)]

    def _apply(self, opts: dict[str, QueueAttr], task: TaskInfo, sign: int) -> None:
        live = opts is self.queue_opts  # not a simulation's copy: the memos' queues move
        for a in self._levels(opts, task):
            if live:
                self._moved(a.name)
            if sign > 0:
                a.allocated.add(task.resreq)
            else:
                a.allocated.sub_without_assert(task.resreq)
            update_share(a, best_effort_is_one=True)

    def on_allocate(self, event: Event) -> None:
        """allocated += request at the leaf and its ancestors; shares updated (O(depth))."""
        self._apply(self.queue_opts, event.task, 1)

    def on_allocate_run(self, events: list[Event]) -> None:
        """on_allocate for each event: requests added in order at every level, shares updated once."""
        touched: dict[str, QueueAttr] = {}
        for event in events:
            for a in self._levels(self.queue_opts, event.task):
                a.allocated.add(event.task.resreq)
                touched[a.name] = a
        for a in touched.values():
            update_share(a, best_effort_is_one=True)
            self._moved(a.name)

    def on_deallocate(self, event: Event) -> None:
        """allocated -= request at the leaf and its ancestors; shares updated."""
        self._apply(self.queue_opts, event.task, -1)

    def simulate_state(self) -> dict[str, QueueAttr]:
        """A private copy of every attr (Volcano's PrePredicateFn CycleState)."""
        return {name: attr.clone() for name, attr in self.queue_opts.items()}

    def simulate_add_task(self, state: dict[str, QueueAttr], task: TaskInfo) -> None:
        """In the copy: the task's queue and its ancestors gain its request."""
        self._apply(state, task, 1)

    def simulate_remove_task(self, state: dict[str, QueueAttr], task: TaskInfo) -> None:
        """In the copy: the task's queue and its ancestors lose its request."""
        self._apply(state, task, -1)

    def simulate_allocatable(self, state: dict[str, QueueAttr], queue: QueueInfo, task: TaskInfo) -> bool:
        """allocatable against the copy, leaf to root (no reason recorded)."""
        if self._refusal(queue) is not None:
            return False
        attr = state.get(queue.name)
        if attr is None:
            return True
        for a in (attr, *(state[n] for n in reversed(attr.ancestors))):
            if over_dimensions(a.allocated, task.resreq, a.real_capability):
                return False
        return True

    # -- session close --------------------------------------------------------------------------
    def on_session_close(self, ssn: Session) -> None:
        """Figures for every attr (ancestors and root included with hierarchy) and explanations."""
        for name, attr in self.queue_opts.items():
            queue = ssn.queues.get(name)
            inherited = self.hierarchy and name not in self.tree.broken
            spec_cap = attr.capability if inherited else (queue.capability if queue else None)
            fig = figures(attr, spec_cap, False)
            fig.deserved = self._opened[name].clone()
            ssn.result.queues[name] = fig
            ssn.result.explanations[name] = self.tree.explanations.get(name, {"plugin": self.name})
