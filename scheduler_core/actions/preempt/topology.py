"""Topology-aware preemption: preempt's path when `enableTopologyAwarePreemption: true`.

Volcano's `topologyAwarePreempt` (`DryRunPreemption`, `SelectVictimsOnNode`, `SelectCandidate`,
after kube-scheduler's default preemption). Preemptors, candidate nodes and offered victims are
those of the normal path (`preempt.py`), but nodes are not scored:
1. K = floor(N * minCandidateNodesPercentage / 100) for the N candidate nodes, raised to
   minCandidateNodesAbsolute, capped at maxCandidateNodesAbsolute and at N. Nodes are dry-run
   in name order until K of them yielded a victim set (`topologyAwarePreemptWorkerNum`, the
   upstream parallelism, is accepted and ignored: the walk is sequential). Soft sharding: the
   shard's nodes are dry-run first, the others only when none of them is a candidate.
2. Dry run of one node: the offered victims go through `preemptable`; when future idle plus all
   of them (one pod slot included) cannot hold the request, the node is no candidate. Then they
   are removed one at a time in victim order until the preemptor fits (no check before the
   first removal), and put back one by one in reverse removal order, each staying back whenever
   the preemptor still fits. "Fits" is only: every queue plugin with `enabledAllocatable`
   accepts the preemptor on its simulated view, the request plus one slot fits the node's
   future idle, and no predicate's simulated inter-pod test (`PredicateFacets.inter_pod`, the
   predicates plugin's) sees a required inter-pod (anti-)affinity violation.
   After the removals only the affinity test is asked again; a node still failing it, or
   ending with no victim, is no candidate.
3. Simulated views, as upstream: a plugin's view exists only when it has `enabledPredicate`
   (a queue plugin without one always refuses) and follows removals only when it has
   `enabledPreemptable` or `enabledAllocatable` (otherwise a predicate judges affinity on the
   state before the dry run). Tasks already Releasing count as gone.
4. Choice among candidates: lowest priority of the first victim, then lowest sum of
   (priority + 2^31), then fewest victims, then the latest earliest start time among the
   highest-priority victims (a task without a start time counts as starting now), then the
   first node by name. Its victims are evicted and the preemptor pipelined there.
The dry runs evict and restore on the session itself through their own statements (the
plugins' event handlers keep their figures, which are the simulated views) and always undo
everything before the next node; nothing of a dry run survives it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler_core.actions.victims.victims import victim_order, victims_fit
from scheduler_core.model import TaskStatus

if TYPE_CHECKING:
    from scheduler_core.actions.victims.capacity import VictimCapacity
    from scheduler_core.actions.victims.nodes import NodeCheck
    from scheduler_core.actions.victims.victims import VictimIndex
    from scheduler_core.framework.conf import PluginOption
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import QueueInfo, TaskInfo

ENABLE = "enableTopologyAwarePreemption"
# argument -> default (Volcano's preempt action arguments)
INT_ARGUMENTS = {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 1,
                 "maxCandidateNodesAbsolute": 100}
# strconv.ParseBool's spellings (the older string-valued arguments)
_BOOLS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
          "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}
_PRIORITY_OFFSET = 2**31
_INT = re.compile(r"[+-]?[0-9]+")
RELEASING = TaskStatus.RELEASING


@dataclass(frozen=True, slots=True)
class TopologyOptions:
    """The preempt action's topology-aware arguments."""

    enabled: bool = False
    min_percentage: int = 10
    min_absolute: int = 1
    max_absolute: int = 100

    def candidates_wanted(self, n: int) -> int:
        """K for N candidate nodes (see the module docstring)."""
        k = n * self.min_percentage // 100
        k = max(k, self.min_absolute)
        return max(0, min(k, self.max_absolute, n))


def _int_argument(arguments: Mapping[str, Any], key: str, default: int, warnings: list[str]) -> int:
    value = arguments.get(key, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT.fullmatch(value.strip()):
        return int(value.strip())  # the older string-valued arguments
    warnings.append(f"preempt: {key} {value!r} is not an integer; the default {default} is used")
    return default


def topology_options(arguments: Mapping[str, Any] | None) -> tuple[TopologyOptions, list[str]]:
    """Read the preempt arguments as Volcano does: a value of the wrong type is ignored (the
    default stays) with a warning, never refused. Returns the options and the warnings."""
    arguments = arguments or {}
    warnings: list[str] = []
    enabled = arguments.get(ENABLE, False)
    if isinstance(enabled, str) and enabled.strip() in _BOOLS:
        enabled = _BOOLS[enabled.strip()]
    if not isinstance(enabled, bool):
        warnings.append(f"preempt: {ENABLE} {enabled!r} is not true or false; the default false is used")
        enabled = False
    values = [_int_argument(arguments, key, default, warnings) for key, default in INT_ARGUMENTS.items()]
    return TopologyOptions(enabled, *values), warnings


@dataclass(slots=True)
class Candidate:
    """A node that could host the preemptor and the victims it would take there."""

    row: int
    victims: list[TaskInfo]

    def rank(self, now: float) -> tuple:
        """Smaller is better (kube's pickOneNodeForPreemption, PDB violations aside)."""
        victims = self.victims
        top = max(v.priority for v in victims)
        earliest = min(now if v.started is None else v.started for v in victims if v.priority == top)
        return (victims[0].priority, sum(v.priority + _PRIORITY_OFFSET for v in victims), len(victims),
                -earliest, self.row)


def select_candidate(candidates: list[Candidate], now: float) -> Candidate:
    """The candidate whose victims cost least (module docstring, step 4)."""
    return min(candidates, key=lambda c: c.rank(now))


class TopologyPreempt:
    """One preempt action's topology-aware path (built once per action)."""

    def __init__(self, ssn: Session, options: TopologyOptions, index: VictimIndex, nodes: NodeCheck,
                 vcap: VictimCapacity) -> None:
        self.ssn = ssn
        self.options = options
        self.index = index
        self.nodes = nodes
        self.vcap = vcap
        # Queue plugins asked for the simulated allocatable: each needs a view (enabledPredicate).
        opts = [ssn.plugin_option(name) for tier in ssn.enabled_fns("allocatable") for name, _ in tier]
        self.queue_views = all(o is None or o.enabled("enabledPredicate") for o in opts)
        # The predicates that declare a simulated inter-pod test (PredicateFacets.inter_pod), each
        # with whether its view follows the dry run's removals (its own switches, as upstream).
        self.inter_pod = [(facets.inter_pod, _follows(ssn.plugin_option(name)))
                          for name, _, facets in ssn.predicate_facets() if facets.inter_pod is not None]

    def preempt(self, stmt: Statement, queue: QueueInfo, preemptor: TaskInfo, rows: np.ndarray,
                keep: Callable[[TaskInfo], bool]) -> bool:
        """Dry-run candidate nodes, pick one, evict its victims and pipeline the preemptor."""
        candidates_mask = self.nodes.candidates(preemptor)
        wanted = self.options.candidates_wanted(int(candidates_mask.sum()))
        if wanted <= 0 or not rows.any():
            return False
        found: list[Candidate] = []
        best_effort = preemptor.best_effort
        # Soft sharding: candidates from the shard's nodes first; the others only when it has none.
        for group in self.ssn.shard.split(rows & candidates_mask):
            for row in np.flatnonzero(group).tolist():
                preemptees = [t for t in self.index.running_on(row)
                              if keep(t) and (t.best_effort or not best_effort)]
                if not preemptees:
                    continue
                victims = self._select_victims(queue, preemptor, row, preemptees)
                if victims:
                    found.append(Candidate(row, victims))
                    if len(found) >= wanted:
                        break
            if found:
                break
        if not found:
            return False
        best = select_candidate(found, self.ssn.now)
        self.ssn.result.count("preemption_attempts")  # one per preemptor given a node's victims
        for victim in best.victims:
            stmt.evict(victim, "preempt")
        stmt.pipeline(preemptor, self.ssn.node_table.names[best.row])
        return True

    def _select_victims(self, queue: QueueInfo, preemptor: TaskInfo, row: int,
                        preemptees: list[TaskInfo]) -> list[TaskInfo] | None:
        """SelectVictimsOnNode: the minimal victim set on the row, or None (no candidate)."""
        ssn = self.ssn
        offered = victim_order(ssn, preemptor, preemptees, self.index, self.vcap.job_keys())
        allowed = ssn.preemptable(preemptor, offered)
        if not victims_fit(ssn, preemptor, row, allowed, self.index):
            return None
        order = victim_order(ssn, preemptor, allowed, self.index, self.vcap.job_keys())
        removed: list[tuple[TaskInfo, Statement]] = []
        dry_run: set[str] = set()  # tasks this dry run removed (a frozen affinity view ignores it)

        def remove(task: TaskInfo) -> None:
            step = ssn.statement()
            step.evict(task, "preempt")
            removed.append((task, step))
            dry_run.add(task.uid)

        try:
            for task in order:
                remove(task)
                if self._fits(queue, preemptor, row, dry_run):
                    break
            if not removed or self._affinity_violated(preemptor, row, dry_run):
                return None
            victims: list[TaskInfo] = []
            for task, step in reversed(list(removed)):
                step.discard()
                dry_run.discard(task.uid)
                if not self._fits(queue, preemptor, row, dry_run):
                    step.evict(task, "preempt")
                    dry_run.add(task.uid)
                    victims.append(task)
            return victims
        finally:
            for _, step in reversed(removed):
                step.discard()

    def _fits(self, queue: QueueInfo, preemptor: TaskInfo, row: int, dry_run: set[str]) -> bool:
        """The simulated fit test (module docstring, step 2)."""
        if not self.queue_views or not self.ssn.allocatable(queue, preemptor):
            return False
        if not self.ssn.node_table.fits_row(preemptor.resreq, row, future=True):
            return False
        return not self._affinity_violated(preemptor, row, dry_run)

    def _affinity_violated(self, task: TaskInfo, row: int, dry_run: set[str]) -> bool:
        """Required inter-pod (anti-)affinity as the predicates' views see the row."""
        for violated, follows in self.inter_pod:

            def gone(t: TaskInfo, follows: bool = follows) -> bool:
                return t.status is RELEASING and (follows or t.uid not in dry_run)

            if violated(task, row, gone):
                return True
        return False


def _follows(option: PluginOption | None) -> bool:
    """A predicate's simulated view follows removals with enabledPreemptable or enabledAllocatable."""
    return option is not None and (option.enabled("enabledPreemptable")
                                   or option.enabled("enabledAllocatable"))
