"""A class's predicate failures per row, kept up to date so its fit errors cost the rows changed.

When a class fits no node, allocate records its fit errors (fit_errors below): how many rows
each predicate failed (a row is blamed once, on the first predicate of the session's order that
fails it: `Session.predicate`) plus the resources short on the rows that passed. With dynamic
predicates (pod counts) that took a full `Session.predicate`, every mask combined over the whole
table, at every failure of every class: at L steady the largest part of the placer's cost.

`Blame` keeps, from the class state's last full predicate, the reason blamed per row and the
count per reason. The rows whose state changed since (the class state's `touched`: placements,
releases) are asked again, mask by mask in the session's order (`Session.predicate_sequence`,
which charges the same work as `predicate`); a row the class has not touched keeps its blame, as
the rows of a local class answer for themselves (the assumption its state's row updates make:
a placement that changes other rows' answers, pod affinity or spread, refreshes every class).
`counts` then gives `predicate(task).counts()`: the failing reasons in the current mask order,
the hard shard's reason listed even when it blames nothing. Where that is not certain (one
reason text on two masks, whose counts `counts()` overwrites; a kept blame whose reason no
current mask gives) it answers None and the caller combines every mask again
(`PredicateResult.combine`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler_core.framework.records import FitErrors

if TYPE_CHECKING:
    from scheduler_core.framework.interface import PredicateResult
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo


def fit_errors(ssn: Session, task: TaskInfo, ok: np.ndarray, predicate_counts: dict[str, int],
               future: bool = True) -> FitErrors:
    """Predicate failures plus `Insufficient <dim>` for the rows that passed but do not fit."""
    reasons = dict(predicate_counts)
    for reason, n in ssn.node_table.insufficient(task.resreq, ok, future=future).items():
        reasons[reason] = reasons.get(reason, 0) + n
    return FitErrors(len(ssn.node_table), reasons)


class Blame:
    """Per row the id of the reason blamed (-1: passes), ids by reason text, counts per id."""

    __slots__ = ("ids", "texts", "rows", "count")

    def __init__(self, pred: PredicateResult, n: int) -> None:
        self.ids: dict[str, int] = {}
        self.texts: list[str] = []
        self.rows = np.full(n, -1, dtype=np.int32)
        self.count: list[int] = []
        for reason, eff in pred.failures:
            i = self._id(reason)
            self.rows[eff] = i
        self.count = np.bincount(self.rows[self.rows >= 0], minlength=len(self.texts)).tolist()

    def _id(self, reason: str) -> int:
        i = self.ids.get(reason)
        if i is None:
            i = self.ids[reason] = len(self.texts)
            self.texts.append(reason)
            self.count.append(0)
        return i

    def update(self, seq: list[tuple[str, np.ndarray, bool]],
               rows: np.ndarray) -> tuple[np.ndarray, dict[str, int]] | None:
        """`rows` asked again against `seq` (Session.predicate_sequence, asked once by the
        caller): (whether each passes, the counts as `predicate(task).counts()` gives them), or
        None when not certain (then `PredicateResult.combine(seq, n)`)."""
        texts = [reason for reason, _, _ in seq]
        if len(set(texts)) != len(texts):
            return None
        new = np.full(len(rows), -1, dtype=np.int32)
        for reason, mask, _ in seq:
            hit = mask[rows] & (new < 0)
            if hit.any():
                new[hit] = self._id(reason)
        old = self.rows[rows]
        count = self.count
        for i in old[old >= 0].tolist():
            count[i] -= 1
        for i in new[new >= 0].tolist():
            count[i] += 1
        self.rows[rows] = new
        out: dict[str, int] = {}
        listed = 0
        for reason, _, always in seq:
            c = count[self.ids[reason]] if reason in self.ids else 0
            if c or always:
                out[reason] = c
                listed += c
        if listed != sum(count):  # a blamed reason no current mask gives: not certain
            return None
        return new < 0, out

