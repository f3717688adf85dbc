"""Queue refusals rendered at session close from the committed queue figures (issue 16, item 1).

While the session runs, a queue plugin that refuses a job records *what* it refused in the
record's `details["refusal"]` (see `refusal()`): the check (`allocate`, `enqueue`, `overused`),
the queue that said no, the figure it compares with (`deserved` or `real_capability`) and the
request it was asked about. Nothing it measured then is quoted: a gang's own tentative
placements, discarded later, would show up as "0 left". `CloseFigures` renders the message and
the details at close from `ssn.result.queues` (the QueueFigures the queue plugin reports for the
session), so every "left" and "headroom" is the figure the queue tree shows for that cycle:

    left = limit - allocated                         (allocate / overused checks)
    left = real_capability - (allocated + inqueue - elastic)   (enqueue check)

`need` is what the job still has to obtain: while its gang is not met, the least that its
missing members ask for (the smallest `min_available - ready - pipelined` pending requests per
dimension); once the gang is met, the refused task's request. A refusal that no longer holds
against the close figures (evictions freed room after it was recorded) is stale: `render`
returns None and build_reasons moves on to the next candidate.

Details of a quota reason (output units: cpu cores, memory bytes, scalars in units, rounded):
`queue`, `check`, `limit_figure`, `insufficient: {dim: {"need", "left"}}`, and `queue_chain`:
root..leaf entries `{queue, deserved, allocated, capability, real_capability, inqueue,
headroom, headroom_of}` with `headroom = max(<headroom_of> - allocated, 0)` per dimension
(`headroom_of` = the reason's `limit_figure`; `real_capability` for NeverFits).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from scheduler_core.framework.records import refusal  # noqa: F401  (re-exported)
from scheduler_core.model import TaskStatus
from scheduler_core.plugins.util.queue_attr import format_dim, over_dimensions
from scheduler_core.resources import Resource, Zero

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import JobInfo
    from scheduler_core.result import QueueFigures

GIB = 2**30
# Without a queue plugin, allocate's figure (never reached: no plugin records a refusal then).
DEFAULT_LIMIT = "deserved"


def resource_key(res: Resource | None) -> Any:
    """A Resource's amounts as a tuple (None stays None)."""
    if res is None:
        return None
    scalars = res.scalars
    return ("R", res.milli_cpu, res.memory, tuple(sorted(scalars.items())) if scalars else ())


def output_amount(name: str, stored: float) -> float:
    """One dimension in output units, rounded to what the unit needs (cores and scalars to the
    thousandth, memory to the byte): float sums never show as 344.0000000000001."""
    if name == "memory":
        return float(round(stored))
    value = round(stored / 1000, 3)
    return 0.0 if value == 0 else value


def output_quantities(res: Resource | None) -> dict[str, float] | None:
    """Rounded output units of a resource (unlimited dimensions left out; None stays None)."""
    if res is None:
        return None
    out = {"cpu": output_amount("cpu", res.milli_cpu), "memory": output_amount("memory", res.memory)}
    for name in sorted(res.scalars):
        out[name] = output_amount(name, res.scalars[name])
    return {k: v for k, v in out.items() if not math.isinf(v)}


def gang_need(job: JobInfo) -> Resource | None:
    """The least the job's missing gang members ask for, per dimension (None when the gang is met).

    Missing = min_available - (ready + pipelined + pending best-effort); per dimension the sum of
    the smallest that many pending requests (exact for identical tasks, a lower bound otherwise).
    """
    missing = (job.min_available - job.ready_task_num() - job.waiting_task_num()
               - job.pending_best_effort_task_num())
    if missing <= 0:
        return None
    counts: dict[tuple, tuple[Resource, int]] = {}
    for task in job.task_status_index.get(TaskStatus.PENDING, {}).values():
        if task.best_effort:
            continue
        key = task.sched_key[0]
        hit = counts.get(key)
        counts[key] = (task.resreq, 1 if hit is None else hit[1] + 1)
    return smallest_sum(list(counts.values()), missing)


def smallest_sum(classes: list[tuple[Resource, int]], k: int) -> Resource:
    """Per dimension, the sum of the k smallest values among `count` copies of each request."""
    names: set[str] = set()
    for req, _ in classes:
        names.update(req.scalars)
    out = Resource.empty()
    for name in ["cpu", "memory", *sorted(names)]:
        left, total = k, 0.0
        for value, n in sorted((req.get(name), n) for req, n in classes):
            take = min(n, left)
            total += value * take
            left -= take
            if left <= 0:
                break
        if name == "cpu":
            out.milli_cpu = total
        elif name == "memory":
            out.memory = total
        elif total > 0:
            out.scalars[name] = total
    return out


def _over(used: Resource, need: Resource, limit: Resource | None) -> list[str]:
    return [] if limit is None else over_dimensions(used, need, limit)


def _listing(names: list[str], res: Resource) -> str:
    return ", ".join(f"{n} {format_dim(n, res.get(n))}" for n in names)


class CloseFigures:
    """The session's committed queue figures, the queue chains, and refusals rendered from them."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.figures: dict[str, QueueFigures] = ssn.result.queues
        # The session's queue plugin: the first that declares a limit figure (Plugin.limit_figure).
        self.plugin = next((p for p in ssn.plugins.values() if p.limit_figure
                            and isinstance(getattr(p, "queue_opts", None), dict)), None)
        # The figure allocate compares with, as the plugin declares it.
        self.allocate_limit = self.plugin.limit_figure if self.plugin is not None else DEFAULT_LIMIT
        # The figures a queue can never get past (Plugin.ceiling_figures; never_fits' limits).
        declared = self.plugin.ceiling_figures if self.plugin is not None else ()
        self.ceiling: tuple[str, ...] = declared or ("real_capability",)
        self._chains: dict[str, list[str]] = {}
        self._details: dict[tuple[str, str], list[dict[str, Any]]] = {}
        # Per session, shared read-only by every reason that quotes them: siblings share their
        # ancestors' chain entries, and jobs of one shape in one queue one rendering.
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        self._fig_keys: dict[str, dict[str, Any]] = {}  # per queue: figure -> resource_key
        self._used: dict[tuple[str, str], Resource] = {}
        self._rendered: dict[tuple, tuple[str, dict[str, Any]] | None] = {}
        # The previous session's quota renderings by key (a kept part, framework.kept): at steady
        # state ~97% of them say the same (the refusing level, its short dimensions and what is
        # left there), only the chain's figures moved. `_still` tells from the levels' figures
        # alone whether one does, without formatting anything; the chain is this session's.
        kept = getattr(ssn, "kept", None)
        self._renders: KeptRenders | None = (kept.part("reasons.renders", KeptRenders)
                                             if kept is not None and kept.keeps_answers() else None)
        if self._renders is not None:
            self._renders.turn()

    def chain(self, queue: str) -> list[str]:
        """root .. queue names whose figures exist (just the queue for flat plugins)."""
        hit = self._chains.get(queue)
        if hit is None:
            attr = self.plugin.queue_opts.get(queue) if self.plugin is not None else None
            names = [*attr.ancestors, queue] if attr is not None else [queue]
            hit = self._chains[queue] = [n for n in names if n in self.figures]
        return hit

    def limit_of(self, queue: str, figure: str) -> Resource | None:
        """A figure (deserved, real_capability, capability) of a queue at close."""
        fig = self.figures.get(queue)
        return None if fig is None else getattr(fig, figure)

    def chain_details(self, queue: str, limit: str) -> list[dict[str, Any]]:
        """details["queue_chain"] for the queue, headroom against `limit` (shared: read-only)."""
        key = (queue, limit)
        hit = self._details.get(key)
        if hit is None:
            hit = self._details[key] = [self._entry(name, limit) for name in self.chain(queue)]
        return hit

    def figure_key(self, name: str, figure: str) -> Any:
        """`resource_key` of one figure of a queue at close, once per session (the kept answers'
        comparisons and the chain entries read the same figures)."""
        keys = self._fig_keys.get(name)
        if keys is None:
            keys = self._fig_keys[name] = {}
        hit = keys.get(figure, _MISSING)
        if hit is _MISSING:
            hit = keys[figure] = resource_key(getattr(self.figures[name], figure))
        return hit

    def _entry(self, name: str, limit: str) -> dict[str, Any]:
        key = (name, limit)
        hit = self._entries.get(key)
        if hit is None:
            renders = self._renders
            if renders is None:
                hit = chain_entry(name, self.figures[name], limit)
            else:  # the last session's entry while the figures it shows are the same
                sig = (*(self.figure_key(name, f) for f in CHAIN_FIGURES), self.figure_key(name, limit))
                kept = renders.chains_before.get(key)
                hit = kept[1] if kept is not None and kept[0] == sig else \
                    chain_entry(name, self.figures[name], limit)
                renders.chains[key] = (sig, hit)
            self._entries[key] = hit
        return hit

    def used(self, name: str, check: str) -> Resource:
        """What a check counts as used at close: allocated, plus inqueue minus elastic for enqueue
        (shared: read-only)."""
        key = (name, "enqueue" if check == "enqueue" else "")
        hit = self._used.get(key)
        if hit is None:
            hit = self._used[key] = self._used_now(name, check)
        return hit

    def _used_now(self, name: str, check: str) -> Resource:
        fig = self.figures[name]
        used = fig.allocated.clone() if fig.allocated is not None else Resource.empty()
        if check == "enqueue":
            if fig.inqueue is not None:
                used.add(fig.inqueue)
            if fig.elastic is not None:
                used.sub_without_assert(fig.elastic)
        return used

    def render(self, job: JobInfo, ref: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """(message, details) of a recorded refusal against the close figures; None when stale."""
        check, queue = ref.get("check"), str(ref.get("queue", job.queue))
        if queue not in self.figures:
            return None
        if check == "overused":
            return self._overused(job, queue)
        limit = str(ref.get("limit") or self.allocate_limit)
        if check == "enqueue":
            need = ref.get("request")
        else:
            need = gang_need(job) or ref.get("request")
        if need is None:
            return None
        # A function of these alone (the figures are the session's): one rendering per shape.
        key = (job.queue, queue, check, limit, need.milli_cpu, need.memory,
               tuple(sorted(need.scalars.items())))
        if key in self._rendered:
            return self._rendered[key]
        renders = self._renders
        if renders is not None:
            kept = renders.get(key)
            if kept is not None and self._still(job.queue, queue, check, limit, need, kept):
                out = (kept.message, {**kept.details, "queue_chain": self.chain_details(job.queue, limit)})
                self._rendered[key] = out
                return out
        out = self._rendered[key] = self._render(job, queue, check, limit, need, key)
        return out

    def _levels(self, leaf: str, queue: str) -> list[str]:
        # The queue that refused first, then the rest of the chain leaf to root (capacity checks
        # every level): the first one still short at close is named.
        return [queue, *(n for n in reversed(self.chain(leaf)) if n != queue)]

    def _still(self, leaf: str, queue: str, check: str, limit: str, need: Resource, kept: KeptRender) -> bool:
        """Whether `_render` would give `kept`'s message and details again: the same first short
        level, short in the same dimensions by the same amounts."""
        for name in self._levels(leaf, queue):
            bound = self.limit_of(name, limit)
            used = self.used(name, check)
            names = _over(used, need, bound)
            if names:
                return (name == kept.level and names == kept.names
                        and [max(bound.get(n) - used.get(n), 0.0) for n in names] == kept.left)
        return False  # stale now: `_render` says so

    def _render(self, job: JobInfo, queue: str, check: str, limit: str,
                need: Resource, key: tuple | None = None) -> tuple[str, dict[str, Any]] | None:
        for name in self._levels(job.queue, queue):
            bound = self.limit_of(name, limit)
            used = self.used(name, check)
            names = _over(used, need, bound)
            if names:
                return self._quota(job, name, check, limit, names, need, bound, used, key)
        return None

    def _quota(self, job: JobInfo, queue: str, check: str, limit: str, names: list[str], need: Resource,
               bound: Resource, used: Resource, key: tuple | None = None) -> tuple[str, dict[str, Any]]:
        left = {n: max(bound.get(n) - used.get(n), 0.0) for n in names}
        clauses = [f"insufficient {n} (need {format_dim(n, need.get(n))}, {format_dim(n, left[n])} left)"
                   for n in names]
        message = f"queue {queue} resource quota insufficient: " + ", ".join(clauses)
        details = {"queue": queue, "check": check, "limit_figure": limit,
                   "insufficient": {n: {"need": output_amount(n, need.get(n)),
                                        "left": output_amount(n, left[n])} for n in names}}
        if key is not None and self._renders is not None:
            self._renders.put(key, KeptRender(queue, names, [left[n] for n in names], message, details))
        return message, {**details, "queue_chain": self.chain_details(job.queue, limit)}

    def _overused(self, job: JobInfo, queue: str) -> tuple[str, dict[str, Any]]:
        fig = self.figures[queue]
        deserved = fig.deserved or Resource.empty()
        allocated = fig.allocated or Resource.empty()
        names = deserved.resource_names()
        details = {"queue": queue, "check": "overused", "limit_figure": "deserved",
                   "queue_chain": self.chain_details(job.queue, "deserved")}
        if deserved.less_equal(allocated, Zero):
            return (f"queue {queue} is overused: allocated {_listing(names, allocated)} "
                    f"reached its deserved {_listing(names, deserved)}"), details
        # Evictions after allocate skipped the queue brought it back under its share.
        return (f"queue {queue} was at its deserved share when allocate reached the job (now "
                f"allocated {_listing(names, allocated)} of deserved {_listing(names, deserved)})"), details


class KeptRender:
    """One quota rendering without its chain, and what decided it: the first short level, its
    short dimensions and what was left in each (`CloseFigures._still` compares them)."""

    __slots__ = ("level", "names", "left", "message", "details", "used")

    def __init__(self, level: str, names: list[str], left: list[float], message: str,
                 details: dict[str, Any]) -> None:
        self.level, self.names, self.left = level, names, left
        self.message, self.details = message, details
        self.used = 0  # the KeptRenders session that last used it


class KeptRenders:
    """The quota renderings a kept state carries from session to session. A job answered from
    its kept entry (job_entries) renders nothing, so a rendering outlives the sessions that do
    not use it; one unused for PRUNE_AFTER sessions is dropped (jobs gone, shapes changed)."""

    PRUNE_AFTER = 32

    def __init__(self) -> None:
        self.renders: dict[tuple, KeptRender] = {}
        self.session = 0
        # Chain entries by (queue, limit) with the figures they show (CHAIN_FIGURES' keys and the
        # limit's): this session's and the last one's.
        self.chains: dict[tuple[str, str], tuple[tuple, dict[str, Any]]] = {}
        self.chains_before: dict[tuple[str, str], tuple[tuple, dict[str, Any]]] = {}

    def turn(self) -> None:
        """A new session (every PRUNE_AFTER sessions, the renderings unused since are dropped)."""
        self.session += 1
        self.chains_before, self.chains = self.chains, {}
        if self.session % self.PRUNE_AFTER == 0:
            oldest = self.session - self.PRUNE_AFTER
            self.renders = {k: r for k, r in self.renders.items() if r.used > oldest}

    def get(self, key: tuple) -> KeptRender | None:
        """The kept rendering for the key, marked used in this session."""
        hit = self.renders.get(key)
        if hit is not None:
            hit.used = self.session
        return hit

    def put(self, key: tuple, render: KeptRender) -> None:
        """Keep a fresh rendering (it replaces the key's old one)."""
        render.used = self.session
        self.renders[key] = render


# What a chain entry shows, besides its headroom (the limit figure less allocated).
CHAIN_FIGURES = ("deserved", "allocated", "capability", "real_capability", "inqueue")
_MISSING = object()


def chain_entry(name: str, fig: Any, limit: str) -> dict[str, Any]:
    """One level of a reason's `queue_chain` (output units): the queue's deserved, allocated,
    capability, real capability and inqueue, and its headroom under `limit` (that figure less
    allocated, never below 0). `fig`: anything with those Resource attributes (None = unknown):
    the session's QueueFigures, or a cycle's samples read back (schedweb fills stored chains so)."""
    bound = getattr(fig, limit)
    headroom = None
    if bound is not None and fig.allocated is not None:
        headroom = bound.clone().sub_without_assert(fig.allocated)
        for dim in ["cpu", "memory", *headroom.scalars]:
            if headroom.get(dim) < 0:
                _set(headroom, dim, 0.0)
    return {"queue": name, "deserved": output_quantities(fig.deserved),
            "allocated": output_quantities(fig.allocated),
            "capability": output_quantities(fig.capability),
            "real_capability": output_quantities(fig.real_capability),
            "inqueue": output_quantities(fig.inqueue), "headroom": output_quantities(headroom),
            "headroom_of": limit}


def _set(res: Resource, name: str, value: float) -> None:
    if name == "cpu":
        res.milli_cpu = value
    elif name == "memory":
        res.memory = value
    else:
        res.scalars[name] = value

