"""allocate's best node under the feasible-node search limit (`framework.node_search`).

`best_in_window(state, search)` is `ClassState.best` when the session's search limits: the
feasible rows (passing the predicates, the request fitting the future idle: Volcano's allocate
predicate) are the class state's candidate rows; the scan keeps the first K of them from the
rotating index and moves the index on; the best among the kept rows wins (idle fits first, then
the score, ties to the lowest row; under soft sharding each of the two in the shard first). Rows
the class has not re-verified since they got a task (`ClassState.unverified`) are verified first
when the scan reaches them: one that now fails moves where the scan stops. Spreading classes
(scores normalised over the scored rows) are scored over the kept rows alone. Score recording
ranks the kept rows (`ClassState.kept`) after such a try.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scheduler_core.actions.allocate.placement import ClassState
    from scheduler_core.framework.node_search import FeasibleSearch

_NEG = -np.inf


def best_in_window(state: ClassState, search: FeasibleSearch) -> tuple[int, bool] | None:
    """(row, pipelined) of the best kept row, or None when no row is feasible."""
    while True:
        if state.feasible_max <= search.k:
            got = None  # K or fewer rows can be feasible: what the window would find
        else:
            feasible = (state.best_idle > _NEG) | (state.best_future > _NEG)
            state.feasible_max = int(np.count_nonzero(feasible))
            got = search.window(feasible)
        if got is None:
            search.advance(None)  # K or fewer feasible rows: the scan went all the way round
            return state.best_all()
        kept, stop = got
        if state.unverified and any_unverified(state, kept, stop):
            state.verify(stop)
            continue
        break
    search.advance(stop)
    state.windowed = True
    idle = state.best_idle[kept] > _NEG
    if state.local:
        by_idle, by_future = state.best_idle[kept], state.best_future[kept]
    else:  # scores normalised over the scored rows: score the kept rows alone
        mask = np.zeros(len(state.table), dtype=bool)
        mask[kept] = True
        scores = state.ssn.node_scores(state.task, mask)[kept]
        by_idle, by_future = np.where(idle, scores, _NEG), np.where(idle, _NEG, scores)
    state.kept = (kept, by_idle, by_future)
    groups = state.ssn.shard.groups  # soft sharding: the shard's kept rows first
    for arr, future in ((by_idle, False), (by_future, True)):
        for group in groups:
            sub = arr if group is None else np.where(group[kept], arr, _NEG)
            j = int(np.argmax(sub))
            if sub[j] > _NEG:
                return int(kept[j]), future
    return None  # pragma: no cover (kept rows are feasible)


def any_unverified(state: ClassState, kept: np.ndarray, stop: int) -> bool:
    """Whether an unverified row is among the scanned feasible rows (kept, or the stop)."""
    if stop in state.unverified:
        return True
    rows = np.fromiter(state.unverified, dtype=np.intp, count=len(state.unverified))
    at = np.searchsorted(kept, rows)
    return bool(((at < len(kept)) & (kept[np.minimum(at, len(kept) - 1)] == rows)).any())
