"""Proportion's iterative weighted deserved algorithm (docs/semantics.md section 6), vectorised over queues.

Each round splits `remaining` among the queues not yet met, by weight; each queue's deserved is
then clamped: min(real capability) -> min(request) -> max(guarantee). A queue is met when its
request fits its deserved, or when its deserved did not move this round. After the round
`remaining = exceeded_part(remaining + decreased, increased)` (never negative). The loop ends
when no weight is left, remaining is empty, or remaining did not move.

Rounds use one `remaining` for every queue, so the per-queue order of Volcano's map walk does
not matter and the round is a few numpy operations over an (n queues x d dimensions) matrix.
"Did not move" uses the MIN_RESOURCE tolerance where Volcano uses exact equality: it only
ends float-noise tails sooner. MAX_ROUNDS is a safety net against pathological geometric tails.
One deliberate difference, `_guard_overshoot`: a round never hands out more than is left, so
the sum of deserved stays within the cluster total whenever the guarantees fit in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler_core.plugins.util.queue_attr import QueueAttr
from scheduler_core.resources import MIN_RESOURCE, Resource

MAX_ROUNDS = 10_000
EXPLAIN_ROUNDS = 30  # rounds kept per queue in the explanation (the rest are only counted)

CLAMP_NONE = "none"
CLAMP_CAPABILITY = "real capability"
CLAMP_REQUEST = "request"
CLAMP_GUARANTEE = "guarantee"


@dataclass
class DeservedRun:
    """Outcome of one run: number of rounds and, per queue, the rounds it took part in."""

    rounds: int = 0
    dims: list[str] = field(default_factory=list)
    explanations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    explained_rounds: dict[str, int] = field(default_factory=dict)


def _dims(total: Resource, attrs: list[QueueAttr]) -> list[str]:
    names: set[str] = set(total.scalars)
    for a in attrs:
        names.update(a.request.scalars)
        names.update(a.guarantee.scalars)
        if a.real_capability is not None:
            names.update(a.real_capability.scalars)
    return ["cpu", "memory", *sorted(names)]


def _vector(res: Resource | None, dims: list[str], missing: float) -> list[float]:
    if res is None:
        return [missing] * len(dims)
    out = [res.milli_cpu, res.memory]
    out.extend(res.scalars.get(n, missing) for n in dims[2:])
    return out


def vector_quantities(vec: np.ndarray, dims: list[str]) -> dict[str, float]:
    """Output units of a stored-unit vector: cpu cores, memory bytes, scalars in their units."""
    out: dict[str, float] = {}
    for k, name in enumerate(dims):
        v = float(vec[k])
        if np.isinf(v):
            continue
        if abs(v) < MIN_RESOURCE:
            v = 0.0  # float noise of the round arithmetic
        out[name] = v if name == "memory" else v / 1000
    return out


def _resource(vec: np.ndarray, dims: list[str], keep: set[str]) -> Resource:
    # Scalars the cluster does not have stay out unless non-zero (they come from requests only).
    scalars = {n: float(vec[k]) for k, n in enumerate(dims[2:], start=2) if n in keep or vec[k] != 0}
    return Resource(float(vec[0]), float(vec[1]), scalars)


def _guard_overshoot(old: np.ndarray, new: np.ndarray, guarantee: np.ndarray,
                     remaining: np.ndarray) -> np.ndarray | None:
    """Scale this round's increases down when they exceed what is left (None when they fit).

    Raising a queue to its guarantee can hand out more than `remaining` in the first round
    (Volcano then just clamps remaining at 0, over-committing the cluster). The guarantee part
    of each increase is kept; the weighted parts above it shrink proportionally so the round
    gives out exactly what was left. Rounds that fit (all the seeds' examples) are untouched.
    """
    inc = new - old
    pos = np.clip(inc, 0, None)
    budget = remaining + np.clip(-inc, 0, None).sum(axis=0)
    over = pos.sum(axis=0) > budget + MIN_RESOURCE
    if not over.any():
        return None
    mandatory = np.minimum(np.clip(guarantee - old, 0, None), pos)
    optional = pos - mandatory
    opt_sum = optional.sum(axis=0)
    room = np.clip(budget - mandatory.sum(axis=0), 0, None)
    factor = np.where(opt_sum > 0, np.minimum(room / np.where(opt_sum > 0, opt_sum, 1.0), 1.0), 1.0)
    return np.where(over[None, :], old + mandatory + optional * factor[None, :], new)


def compute_deserved(attrs: list[QueueAttr], total: Resource, explain: bool = True,
                     max_rounds: int = MAX_ROUNDS, guard_overshoot: bool = True) -> DeservedRun:
    """Set every attr's `deserved` by the iterative algorithm; return rounds and explanations.

    Inputs read from each attr: weight, request, real_capability (None = unlimited), guarantee.
    `guard_overshoot=False` gives Volcano's exact behaviour when guarantee floors over-commit.
    """
    run = DeservedRun(dims=_dims(total, attrs))
    n, dims = len(attrs), run.dims
    if n == 0:
        return run
    inf = float("inf")
    weight = np.array([float(a.weight) for a in attrs])
    request = np.array([_vector(a.request, dims, 0.0) for a in attrs])
    cap = np.array([_vector(a.real_capability, dims, inf) for a in attrs])
    guarantee = np.array([_vector(a.guarantee, dims, 0.0) for a in attrs])
    deserved = np.zeros((n, len(dims)))
    remaining = np.array(_vector(total, dims, 0.0))
    met = np.zeros(n, dtype=bool)
    if explain:
        run.explanations = {a.name: [] for a in attrs}
        run.explained_rounds = {a.name: 0 for a in attrs}
    while run.rounds < max_rounds:
        active = ~met
        total_weight = float(weight[active].sum())
        if total_weight <= 0:
            break
        run.rounds += 1
        idx = np.flatnonzero(active)
        old = deserved[idx]
        added = old + remaining[None, :] * (weight[idx] / total_weight)[:, None]
        capped = np.minimum(added, cap[idx])
        clipped = np.minimum(capped, request[idx])
        new = np.maximum(clipped, guarantee[idx])
        scaled = _guard_overshoot(old, new, guarantee[idx], remaining) if guard_overshoot else None
        if scaled is not None:
            new = scaled
        deserved[idx] = new
        req = request[idx]
        fits = np.all((req < new) | (np.abs(req - new) < MIN_RESOURCE), axis=1)
        still = np.all(np.abs(new - old) < MIN_RESOURCE, axis=1)
        met[idx[fits | still]] = True
        delta = new - old
        increased = np.clip(delta, 0, None).sum(axis=0)
        decreased = np.clip(-delta, 0, None).sum(axis=0)
        old_remaining = remaining
        remaining = np.clip(remaining + decreased - increased, 0, None)
        if explain:
            _explain_round(run, attrs, idx, old_remaining, total_weight, new, fits | still,
                           (added > capped + MIN_RESOURCE, capped > clipped + MIN_RESOURCE,
                            guarantee[idx] > clipped + MIN_RESOURCE, req > new + MIN_RESOURCE),
                           scaled is not None)
        if np.all(remaining < MIN_RESOURCE) or np.all(np.abs(remaining - old_remaining) < MIN_RESOURCE):
            break
    keep = set(total.scalars)
    for i, a in enumerate(attrs):
        a.deserved = _resource(deserved[i], dims, keep | set(a.guarantee.scalars))
    return run


def _primary_dim(attr: QueueAttr, dims: list[str], clamps: dict[str, str], unmet: list[str]) -> str:
    """The dimension a round's one-word clamp speaks for: the first one (order cpu, scalars (GPUs...),
    memory) whose request is still above the deserved, else the first one the queue requests; for
    a queue that requests nothing, the first clamped. So "request" means the whole request is met."""
    order = [dims[0], *dims[2:], dims[1]]
    for dim in order:
        if dim in unmet:
            return dim
    for dim in order:
        if attr.request.get(dim) >= MIN_RESOURCE:
            return dim
    return next((d for d in order if d in clamps), dims[0])


def _explain_round(run: DeservedRun, attrs: list[QueueAttr], idx: np.ndarray, remaining: np.ndarray,
                   total_weight: float, new: np.ndarray, met: np.ndarray,
                   masks: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], scaled: bool) -> None:
    """Append this round to each active queue's explanation (first EXPLAIN_ROUNDS rounds only).

    `clamp` speaks for a dimension whose request is still above the round's deserved when there
    is one ("request" = the whole request is met); `met` is the algorithm's "done" (met or stuck).
    """
    dims = run.dims
    rem_q: dict[str, float] | None = None
    by_cap, by_req, by_guar, short = masks
    for row, i in enumerate(idx):
        name = attrs[i].name
        run.explained_rounds[name] += 1
        rounds = run.explanations[name]
        if len(rounds) >= EXPLAIN_ROUNDS:
            continue
        if rem_q is None:
            rem_q = vector_quantities(remaining, dims)
        clamps: dict[str, str] = {}
        for k, dim in enumerate(dims):
            if by_guar[row, k]:
                clamps[dim] = CLAMP_GUARANTEE
            elif by_req[row, k]:
                clamps[dim] = CLAMP_REQUEST
            elif by_cap[row, k]:
                clamps[dim] = CLAMP_CAPABILITY
        unmet = [dim for k, dim in enumerate(dims) if short[row, k]]
        summary = clamps.get(_primary_dim(attrs[i], dims, clamps, unmet), CLAMP_NONE)
        rounds.append({"round": run.rounds, "remaining": rem_q, "total_weight": total_weight,
                       "weight": attrs[i].weight, "deserved": vector_quantities(new[row], dims),
                       "clamp": summary, "clamps": clamps, "met": bool(met[row]), "scaled_down": scaled})
