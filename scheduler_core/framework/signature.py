"""Signatures: which task fields a placement callback's answer depends on (Kubernetes' SignPod).

allocate keeps one placement state (predicate masks, fit masks, scores, fit errors) per class of
tasks whose answers are identical in every state of the session. Which tasks those are is
declared by the plugins, not assumed by the action: every predicate, node-order and
batch-node-order registration may carry a `Signature` naming the task fields its answer reads
(besides the NodeTable and the plugin's own state). Tasks equal on the union of the enabled
callbacks' fields, plus the request (the fit test reads it), share a class. A registration
without a signature cannot sign: the class is then the whole `TaskInfo.sched_key`, as if every
scheduling field mattered (the safe default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo

# Signable task fields and their position in TaskInfo.sched_key (namespace is not in the key).
KEY_POSITION: dict[str, int] = {"resreq": 0, "node_selector": 1, "tolerations": 2, "affinity": 3,
                                "topology_spread_constraints": 4, "labels": 5, "priority": 6}
FIELDS: frozenset[str] = frozenset(KEY_POSITION) | {"namespace"}
# What the placement itself reads of every task (the idle / future-idle fit test).
PLACEMENT_FIELDS: frozenset[str] = frozenset({"resreq"})


@dataclass(frozen=True, slots=True)
class Signature:
    """The task fields a callback's answers depend on; equal fields give equal answers.

    `inter_pod` fields are read only while some task of the session carries required pod
    (anti-)affinity or topology spread constraints: inter-pod terms match other pods' labels and
    namespaces, so only then do a task's own labels and namespace matter.
    """

    fields: frozenset[str] = frozenset()
    inter_pod: frozenset[str] = frozenset()

    def __init__(self, fields: Iterable[str] = (), inter_pod: Iterable[str] = ()) -> None:
        object.__setattr__(self, "fields", frozenset(fields))
        object.__setattr__(self, "inter_pod", frozenset(inter_pod))
        unknown = (self.fields | self.inter_pod) - FIELDS
        if unknown:
            raise ValueError(f"unknown task field(s) in signature: {', '.join(sorted(unknown))}")

    def effective(self, inter_pod: bool) -> frozenset[str]:
        """The fields that matter in a session with (or without) inter-pod terms."""
        return self.fields | self.inter_pod if inter_pod else self.fields


def has_inter_pod_terms(tasks: Iterable[TaskInfo]) -> bool:
    """Some task carries required pod (anti-)affinity or topology spread constraints."""
    for t in tasks:
        if t.topology_spread_constraints:
            return True
        aff = t.affinity
        if aff and (aff.get("podAffinity") or aff.get("podAntiAffinity")):
            return True
    return False


def session_has_inter_pod_terms(ssn: Session) -> bool:
    """`has_inter_pod_terms` over every task of the session (placed, pending or finished)."""
    return has_inter_pod_terms(t for job in ssn.jobs.values() for t in job.tasks.values())


def signed_fields(signatures: Iterable[Signature | None],
                  inter_pod: Callable[[], bool]) -> frozenset[str] | None:
    """Union of the signatures' fields and PLACEMENT_FIELDS; None when one cannot sign.

    `inter_pod()` is asked (once) only when some signature has inter-pod fields.
    """
    fields, conditional = set(PLACEMENT_FIELDS), set()
    for sig in signatures:
        if sig is None:
            return None
        fields |= sig.fields
        conditional |= sig.inter_pod
    if conditional - fields and inter_pod():
        fields |= conditional
    return frozenset(fields)


def class_key_fn(fields: frozenset[str] | None) -> Callable[[TaskInfo], object]:
    """task -> its class key: the signed fields' parts of `sched_key` (plus the namespace)."""
    if fields is None:
        return _sched_key
    positions = sorted(KEY_POSITION[f] for f in fields if f in KEY_POSITION)
    with_namespace = "namespace" in fields
    if len(positions) == len(KEY_POSITION) and not with_namespace:
        return _sched_key
    pick = itemgetter(*positions)
    if with_namespace:
        return lambda t: (pick(t.sched_key), t.namespace)
    return lambda t: pick(t.sched_key)


def _sched_key(task: TaskInfo) -> tuple:
    return task.sched_key
