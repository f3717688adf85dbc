"""proportion: weighted fair share between flat queues (docs/semantics.md section 6).

At session open: cluster total and total guarantee (over every queue), one QueueAttr per queue
that has jobs, real capability = min(capability, exceeded_part(total, total guarantee) +
guarantee) with unset cpu/memory capability meaning unlimited, then the iterative deserved
algorithm (proportion_deserved). Registered extension points: queue order (priority, then
lower share), reclaimable (victims only while the victim queue's simulated allocated exceeds
its deserved; Volcano's extra "allocated less than the reclaimer's request" skip is not
applied, per the semantics page), overused (deserved <= allocated), allocatable / preemptive
(queue Open and allocated + request <= deserved on the requested dimensions; with a count of
how many copies of a task in a row it allows), job enqueueable
(queue Open; min_req + allocated + inqueue - elastic <= real capability on the dimensions
min_req asks for), job enqueued (reserve inqueue), and allocate/deallocate event handlers.
Simulation for preempt: `simulate_state`, `simulate_add_task`, `simulate_remove_task`,
`simulate_allocatable` (Volcano's PrePredicate/Simulate* functions) work on cloned attrs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scheduler_core.framework.interface import Event, EventHandler, Plugin
from scheduler_core.framework.records import refusal
from scheduler_core.model import JobInfo, QueueInfo, QueueState, TaskInfo
from scheduler_core.plugins.proportion.deserved import DeservedRun, compute_deserved
from scheduler_core.plugins.util.job_figures import job_sums
from scheduler_core.plugins.util.queue_attr import (
    SHARE_FIELDS,
    QueueAttr,
    ReasonMemo,
    add_contribution,
    chain_entry,
    copies_within,
    effective_capability,
    figures,
    over_dimensions,
    quantities,
    quota_message,
    shape,
    update_share,
)
from scheduler_core.plugins.util.votes import ABSTAIN, PERMIT, REJECT
from scheduler_core.resources import Infinity, Resource, Zero, exceeded_part

if TYPE_CHECKING:
    from scheduler_core.framework.conf import PluginOption
    from scheduler_core.framework.session import Session


class ProportionPlugin(Plugin):
    """Weighted fair share: deserved per queue, queue order by share, quota checks."""

    name = "proportion"

    limit_figure = "deserved"
    # deserved never exceeds max(real capability, guarantee): the most a queue can ever get.
    ceiling_figures = ("real_capability", "guarantee")
    explanation_form = "weight-rounds"

    @classmethod
    def ignored_queue_fields(cls, option: PluginOption, *, is_leaf: bool) -> dict[str, str] | None:
        """Flat: a parent plays no part; a leaf's deserved is computed from the weights."""
        if not is_leaf:
            why = ("The active configuration uses the flat proportion plugin, which shares among the queues "
                   "that hold jobs: a parent queue's {field} has no effect.")
            return {f: why.format(field=f) for f in SHARE_FIELDS}
        return {"deserved": ("The active configuration uses the proportion plugin, which computes deserved "
                             "from the weights: the configured deserved has no effect.")}

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.total_resource = Resource.empty()
        self.total_guarantee = Resource.empty()
        self.queue_opts: dict[str, QueueAttr] = {}
        self.run = DeservedRun()
        self._opened: dict[str, Resource | None] = {}
        self._job_attr: dict[str, QueueAttr] = {}

    # -- session open ---------------------------------------------------------------------------
    def build_attrs(self, ssn: Session) -> None:
        """Totals, one attr per queue with jobs (job figures summed), real capability, deserved."""
        self.total_resource = ssn.total_resource.clone()
        self.total_guarantee = Resource.empty()
        for q in ssn.queues.values():
            if q.guarantee is not None:
                self.total_guarantee.add(q.guarantee)
        contestable = exceeded_part(self.total_resource, self.total_guarantee)
        opts: dict[str, QueueAttr] = {}
        # Per queue, its jobs' figures summed (kept across sessions: plugins.util.job_figures).
        for name, parts in job_sums(ssn, self.name).items():
            queue = ssn.queues.get(name)
            if queue is None:
                continue
            attr = opts[name] = self._new_attr(queue, contestable)
            add_contribution(attr, parts)
        # Deterministic order (Volcano walks a map; the result does not depend on it).
        self.queue_opts = {name: opts[name] for name in sorted(opts)}
        self.run = compute_deserved(list(self.queue_opts.values()), self.total_resource)
        for attr in self.queue_opts.values():
            update_share(attr)
        self._opened = {name: a.deserved.clone() for name, a in self.queue_opts.items()}

    @staticmethod
    def _new_attr(queue: QueueInfo, contestable: Resource) -> QueueAttr:
        attr = QueueAttr(name=queue.name, weight=queue.weight,
                         capability=effective_capability(queue.capability))
        if queue.guarantee is not None:
            attr.guarantee = queue.guarantee.clone()
        real = contestable.clone().add(attr.guarantee)
        if attr.capability is not None:
            real.min_dimension_resource(attr.capability, Infinity)
        attr.real_capability = real
        return attr

    def on_session_open(self, ssn: Session) -> None:
        """Compute the queue figures and register every extension point."""
        self.build_attrs(ssn)
        self._job_attr = {}
        self.ssn = ssn
        self.memo = ReasonMemo(ssn, self.name)
        # allocatable's refusals by (queue, allocated, deserved, request) values.
        self._refusals: dict[tuple[Any, ...], tuple[str, dict[str, Any]]] = {}
        ssn.add_queue_order_fn(self.name, self.queue_order, key_fn=self.queue_order_key)
        ssn.add_reclaimable_fn(self.name, self.reclaimable)
        ssn.add_overused_fn(self.name, self.overused)
        ssn.add_allocatable_fn(self.name, self.allocatable, count_fn=self.allocatable_count)
        ssn.add_preemptive_fn(self.name, self.preemptive)
        ssn.add_job_enqueueable_fn(self.name, self.job_enqueueable)
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        ssn.add_event_handler(EventHandler(allocate_func=self.on_allocate,
                                           deallocate_func=self.on_deallocate,
                                           allocate_batch_func=self.on_allocate_run))

    # -- extension points -----------------------------------------------------------------------
    def _share(self, queue: QueueInfo) -> float:
        attr = self.queue_opts.get(queue.name)
        return attr.share if attr is not None else 0.0

    def queue_order_key(self, queue: QueueInfo) -> tuple[int, float]:
        """Sort key of queue_order: higher priority, then lower share, first."""
        return (-queue.priority, self._share(queue))

    def queue_order(self, lhs: QueueInfo, rhs: QueueInfo) -> int:
        """Higher priority first, then the lower share (the hungrier queue)."""
        if lhs.priority != rhs.priority:
            return -1 if lhs.priority > rhs.priority else 1
        ls, rs = self._share(lhs), self._share(rhs)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """Victims from queues whose (simulated) allocated still exceeds their deserved."""
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for reclaimee in reclaimees:
            qname = self.ssn.jobs[reclaimee.job_uid].queue
            attr = self.queue_opts.get(qname)
            if attr is None:
                continue
            allocated = allocations.get(qname)
            if allocated is None:
                allocated = allocations[qname] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved, Zero):
                allocated.sub_without_assert(reclaimee.resreq)
                victims.append(reclaimee)
        return victims, PERMIT

    def overused(self, queue: QueueInfo) -> bool:
        """deserved <= allocated in every dimension."""
        attr = self.queue_opts.get(queue.name)
        return attr is not None and attr.deserved.less_equal(attr.allocated, Zero)

    def _fits_deserved(self, attr: QueueAttr, task: TaskInfo) -> tuple[bool, list[str]]:
        names = over_dimensions(attr.allocated, task.resreq, attr.deserved)
        return not names, names

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Queue Open and allocated + request <= deserved on the requested dimensions."""
        attr = self.queue_opts.get(queue.name)
        if queue.state is not QueueState.OPEN:
            self.memo.record(task.job_uid, "QueueClosed",
                             f"queue {queue.name} is {queue.state.value.lower()}")
            return False
        if attr is None:
            return True
        ok, names = self._fits_deserved(attr, task)
        if not ok and not self.memo.has(task.job_uid, "QueueOverDeserved"):
            # The same figures refusing a request of the same shape give the same message and
            # details: built once per session and shared by the records (read-only, as every
            # reader copies before adding).
            key = (queue.name, shape(attr.allocated), shape(attr.deserved), shape(task.resreq))
            hit = self._refusals.get(key)
            if hit is None:
                left = attr.deserved.clone().sub_without_assert(attr.allocated)
                # The message and chain are this moment's view; the reason is rendered at close
                # from the committed figures and the refusal (reason_figures).
                hit = self._refusals[key] = (
                    quota_message(queue.name, names, task.resreq, left),
                    {"queue_chain": [chain_entry(attr, attr.deserved)], "limit": "deserved",
                     "refusal": refusal("allocate", queue.name, "deserved", task.resreq)})
            self.memo.record(task.job_uid, "QueueOverDeserved", hit[0], hit[1])
        return ok

    def allocatable_count(self, queue: QueueInfo, task: TaskInfo, k_max: int) -> int:
        """How many copies of the task in a row `allocatable` lets through (each copy's allocate
        event adds its request): the largest k <= k_max. Records nothing."""
        if queue.state is not QueueState.OPEN:
            return 0
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return k_max
        return copies_within(attr.allocated, task.resreq, attr.deserved, k_max)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Same test as allocatable (no reason recorded: reclaim only asks)."""
        attr = self.queue_opts.get(queue.name)
        if queue.state is not QueueState.OPEN:
            return False
        return attr is None or self._fits_deserved(attr, task)[0]

    def job_enqueueable(self, job: JobInfo) -> int:
        """Permit when min_req + allocated + inqueue - elastic <= real capability (requested dims)."""
        queue = self.ssn.queues.get(job.queue)
        attr = self.queue_opts.get(job.queue)
        if queue is None or attr is None:
            return ABSTAIN
        if queue.state is not QueueState.OPEN:
            self.memo.record(job.uid, "QueueClosed", f"queue {queue.name} is {queue.state.value.lower()}")
            return REJECT
        if attr.real_capability is None or job.min_resources is None:
            return PERMIT
        min_req = job.get_min_resources()
        used = attr.allocated.clone().add(attr.inqueue).sub_without_assert(attr.elastic)
        ok, names = min_req.clone().add(used).less_equal_with_dimension_and_resources_name(
            attr.real_capability, min_req)
        if ok:
            return PERMIT
        left = attr.real_capability.clone().sub_without_assert(used)
        entry = chain_entry(attr, attr.real_capability)
        entry["inqueue"] = quantities(attr.inqueue)
        self.memo.record(job.uid, "QueueOverCapability", quota_message(queue.name, names, min_req, left),
                         {"queue_chain": [entry], "limit": "real_capability",
                          "refusal": refusal("enqueue", queue.name, "real_capability", min_req)})
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """Reserve the admitted job's minimum resources as the queue's inqueue."""
        attr = self.queue_opts.get(job.queue)
        if attr is not None:
            attr.inqueue.add(job.deducted_min_resources())

    def _attr_of(self, task: TaskInfo) -> QueueAttr | None:
        attr = self._job_attr.get(task.job_uid)
        if attr is None:
            attr = self.queue_opts.get(self.ssn.jobs[task.job_uid].queue)
            if attr is not None:
                self._job_attr[task.job_uid] = attr
        return attr

    def on_allocate(self, event: Event) -> None:
        """allocated += request; share updated."""
        attr = self._attr_of(event.task)
        if attr is not None:
            attr.allocated.add(event.task.resreq)
            update_share(attr)

    def on_allocate_run(self, events: list[Event]) -> None:
        """on_allocate for each event: the requests added in order, each share updated once."""
        touched: dict[str, QueueAttr] = {}
        for event in events:
            attr = self._attr_of(event.task)
            if attr is not None:
                attr.allocated.add(event.task.resreq)
                touched[attr.name] = attr
        for attr in touched.values():
            update_share(attr)

    def on_deallocate(self, event: Event) -> None:
        """allocated -= request; share updated."""
        attr = self._attr_of(event.task)
        if attr is not None:
            attr.allocated.sub_without_assert(event.task.resreq)
            update_share(attr)

    # -- simulation (preempt) -------------------------------------------------------------------
    def simulate_state(self) -> dict[str, QueueAttr]:
        """A private copy of the queue figures (Volcano's PrePredicateFn CycleState)."""
        return {name: attr.clone() for name, attr in self.queue_opts.items()}

    def simulate_add_task(self, state: dict[str, QueueAttr], task: TaskInfo) -> None:
        """In the copy: the task's queue gains its request."""
        attr = state.get(self.ssn.jobs[task.job_uid].queue)
        if attr is not None:
            attr.allocated.add(task.resreq)
            update_share(attr)

    def simulate_remove_task(self, state: dict[str, QueueAttr], task: TaskInfo) -> None:
        """In the copy: the task's queue loses its request."""
        attr = state.get(self.ssn.jobs[task.job_uid].queue)
        if attr is not None:
            attr.allocated.sub_without_assert(task.resreq)
            update_share(attr)

    def simulate_allocatable(self, state: dict[str, QueueAttr], queue: QueueInfo, task: TaskInfo) -> bool:
        """allocatable against the copy (no reason recorded)."""
        attr = state.get(queue.name)
        if queue.state is not QueueState.OPEN:
            return False
        return attr is None or self._fits_deserved(attr, task)[0]

    # -- session close --------------------------------------------------------------------------
    def on_session_close(self, ssn: Session) -> None:
        """Per-queue figures (deserved/real capability as at open) and the deserved explanation."""
        for name, attr in self.queue_opts.items():
            queue = ssn.queues[name]
            fig = figures(attr, queue.capability, self.overused(queue))
            opened = self._opened.get(name)
            if opened is not None:
                fig.deserved = opened.clone()
            ssn.result.queues[name] = fig
            ssn.result.explanations[name] = self.explanation(attr)

    def explanation(self, attr: QueueAttr) -> dict[str, Any]:
        """JSON-serialisable story of the queue's deserved: inputs and each round it took part in."""
        return {
            "plugin": self.name,
            "cluster_total": quantities(self.total_resource),
            "total_guarantee": quantities(self.total_guarantee),
            "weight": attr.weight,
            "request": quantities(attr.request),
            "capability": quantities(attr.capability),
            "guarantee": quantities(attr.guarantee),
            "real_capability": quantities(attr.real_capability),
            "deserved": quantities(self._opened.get(attr.name, attr.deserved)),
            # Dimensions whose request exceeds the deserved (empty: the whole request is met).
            "unmet": over_dimensions(Resource.empty(), attr.request,
                                     self._opened.get(attr.name, attr.deserved)),
            "rounds": self.run.explanations.get(attr.name, []),
            "rounds_total": self.run.explained_rounds.get(attr.name, 0),
            "algorithm_rounds": self.run.rounds,
        }
