"""Which nodes preempt and reclaim consider, and when a preemptor fits one (docs/semantics.md section 5).

A node is left out only for failures eviction cannot fix: what each enabled predicate declares
as its `unresolvable` facet (framework.extension_points.PredicateFacets; the predicates plugin's:
node selector or affinity, untolerated taints, cordoned, unmatched required pod affinity, a
missing topology spread key; a predicate without the facet counts in full, e.g. usage), and, in
hard sharding mode, a node outside the scheduler's shard. Nodes failing on pod count, inter-pod
anti-affinity, spread skew or resources stay candidates; after each tentative eviction `fits`
asks that one node again: future idle and a free pod slot (the action's own fit test, with or
without any predicate), then the `row_failure` facet of each predicate declaring
`unresolvable`, with the Releasing tasks counted as gone. `undo_since` discards a statement's
operations after a mark: a node whose evictions did not get the preemptor placed keeps none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.plugins.util.node_static import pod_terms

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.framework.statement import Statement
    from scheduler_core.model import TaskInfo


def _uses_pods(task: TaskInfo) -> bool:
    """The task's candidate rows depend on the pods placed (required pod affinity)."""
    return bool(pod_terms(task, "podAffinity"))


class NodeCheck:
    """Candidate rows and the one-row fit re-check for preempt and reclaim."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        # Per enabled predicate: what eviction cannot fix (its unresolvable facet, else all of it).
        self.unfixable = [facets.unresolvable or fn for _, fn, facets in ssn.predicate_facets()]
        self.rechecks = [facets.row_failure for _, _, facets in ssn.predicate_facets()
                         if facets.unresolvable is not None and facets.row_failure is not None]
        self._cache: dict[tuple, np.ndarray] = {}

    def candidates(self, task: TaskInfo) -> np.ndarray:
        """Rows passing every predicate failure that eviction cannot fix (read-only array)."""
        static = not _uses_pods(task)
        key = task.sched_key
        if static:
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        table = self.ssn.node_table
        ok = table.all_rows()
        shard_failure = self.ssn.shard.failure
        if shard_failure is not None:  # hard sharding: eviction cannot bring a node into the shard
            ok &= ~shard_failure[1]
        for unfixable in self.unfixable:
            for _, mask in unfixable(task, table):
                ok &= ~mask
        ok.flags.writeable = False
        if static:
            self._cache[key] = ok
        return ok

    def fits(self, task: TaskInfo, row: int) -> bool:
        """The task fits the row's future idle (a pod slot included) and passes the fixable
        predicates there."""
        table = self.ssn.node_table
        if not table.fits_row(task.resreq, row, future=True):
            return False
        return all(recheck(task, row, table) is None for recheck in self.rechecks)


def undo_since(ssn: Session, stmt: Statement, mark: int) -> None:
    """Discard the statement's operations after position `mark` (last first)."""
    if len(stmt.operations) <= mark:
        return
    tail = ssn.statement()
    tail.operations = stmt.operations[mark:]
    del stmt.operations[mark:]
    tail.discard()
