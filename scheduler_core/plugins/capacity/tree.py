"""Queue attributes of the capacity plugin, flat and hierarchical (docs/semantics.md section 6).

Flat: one attr per queue with jobs; real capability = min(capability, exceeded_part(total,
total guarantee) + guarantee). Hierarchical: one attr per queue (ancestors root .. parent);
the root's capability, real capability and deserved are the cluster total and its guarantee
the sum of its children's; walking down, a child inherits the capability dimensions it leaves
unset and gets real capability = min(capability, exceeded_part(parent real capability, sum of
the siblings' guarantees) + own guarantee). Job figures go to the leaf and every ancestor.
Both: deserved = max(min(spec deserved, real capability), guarantee); no spec deserved means
best-effort (share 1). Configuration problems become warnings, never errors: cycles break only
the queues on or under them, and a child above its parent (capability, sum of deserved, sum of
guarantees) is reported but scheduled.
The hierarchy is built in two parts: the structure (`build_structure`: queue definitions and the
cluster total) and the job figures (`add_job_figures`); `kept_tree.py` keeps the first across
sessions and brings the second up to date from what changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler_core.model import QueueInfo
from scheduler_core.plugins.util.job_figures import Parts, job_sums
from scheduler_core.plugins.util.queue_attr import (
    QueueAttr,
    add_contribution,
    effective_capability,
    format_dim,
    quantities,
    update_share,
)
from scheduler_core.resources import Infinity, Resource, Zero, exceeded_part, max_resource

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session

ROOT = "root"


@dataclass
class CapacityTree:
    """The attrs plus what the dashboard and the reasons need to explain them."""

    attrs: dict[str, QueueAttr] = field(default_factory=dict)
    hierarchy: bool = False
    broken: dict[str, str] = field(default_factory=dict)      # queue -> why it is not scheduled
    warnings: list[str] = field(default_factory=list)
    explanations: dict[str, dict[str, Any]] = field(default_factory=dict)

    def chain(self, name: str) -> list[str]:
        """The queue's ancestors then itself (root .. leaf)."""
        attr = self.attrs[name]
        return [*attr.ancestors, name]


def _new_attr(queue: QueueInfo) -> QueueAttr:
    attr = QueueAttr(name=queue.name, weight=queue.weight)
    if queue.deserved is not None:
        attr.deserved = queue.deserved.clone()
    if queue.guarantee is not None:
        attr.guarantee = queue.guarantee.clone()
    return attr


def _finish(tree: CapacityTree, attr: QueueAttr, spec: Resource, parent: QueueAttr | None,
            share: bool = True) -> None:
    """Clamp deserved (real capability, then guarantee), set the share (unless `share` is False:
    the hierarchy sets it once the job figures are in), write the explanation."""
    capped = spec.clone()
    if attr.real_capability is not None:
        capped.min_dimension_resource(attr.real_capability, Infinity)
    final = max_resource(capped, attr.guarantee)
    clamp = "none"
    if not final.equal(capped, Zero):
        clamp = "guarantee"
    elif not capped.equal(spec, Zero):
        clamp = "real capability"
    attr.deserved = final
    if share:
        update_share(attr, best_effort_is_one=True)
    tree.explanations.setdefault(attr.name, {}).update({
        "plugin": "capacity",
        "hierarchy": tree.hierarchy,
        "spec_deserved": quantities(spec),
        "real_capability": quantities(attr.real_capability),
        "after_real_capability": quantities(capped),
        "guarantee": quantities(attr.guarantee),
        "deserved": quantities(final),
        "clamp": clamp,
        "best_effort": final.is_empty(),
        "capability": quantities(attr.capability),
        "parent": None if parent is None else {
            "queue": parent.name, "deserved": quantities(parent.deserved),
            "real_capability": quantities(parent.real_capability),
            "capability": quantities(parent.capability)},
    })


def build_flat(ssn: Session) -> CapacityTree:
    """Volcano's buildQueueAttrs: attrs for queues that have jobs."""
    tree = CapacityTree()
    total = ssn.total_resource
    total_guarantee = Resource.empty()
    for q in ssn.queues.values():
        if q.guarantee is not None:
            total_guarantee.add(q.guarantee)
    contestable = exceeded_part(total, total_guarantee)
    for name, parts in job_sums(ssn, "capacity").items():
        queue = ssn.queues.get(name)
        if queue is None:
            continue
        attr = tree.attrs[name] = _new_attr(queue)
        attr.capability = effective_capability(queue.capability)
        real = contestable.clone().add(attr.guarantee)
        if attr.capability is not None:
            real.min_dimension_resource(attr.capability, Infinity)
        attr.real_capability = real
        add_contribution(attr, parts)
    tree.attrs = {n: tree.attrs[n] for n in sorted(tree.attrs)}
    for attr in tree.attrs.values():
        _finish(tree, attr, attr.deserved, None)
    return tree


def _ancestors(queues: dict[str, QueueInfo], name: str) -> tuple[list[str], list[str] | None]:
    """(ancestors root .. parent, path up to the repeated queue or None). A missing parent is the root."""
    path: list[str] = [name]
    seen: set[str] = {name}
    cur = name
    while cur != ROOT:
        parent = queues[cur].parent or ROOT
        if parent not in queues:
            parent = ROOT
        if parent in seen:
            return [], [*path, parent]
        seen.add(parent)
        path.append(parent)
        cur = parent
    return list(reversed(path[1:])), None


def _cycle_text(path: list[str]) -> str:
    """The cycle at the end of an upward path, starting at its smallest name: "x -> y -> x"."""
    ring = path[path.index(path[-1]):-1]
    start = ring.index(min(ring))
    ring = ring[start:] + ring[:start]
    return " -> ".join([*ring, ring[0]])


def build_structure(queues: Mapping[str, QueueInfo], total: Resource) -> CapacityTree:
    """The structure part of Volcano's buildHierarchicalQueueAttrs: ancestors, children,
    capability, real capability, final deserved, explanations and warnings, from the queue
    definitions and the cluster total only. Job figures stay empty and shares unset
    (`add_job_figures`); warnings instead of a failed session."""
    tree = CapacityTree(hierarchy=True)
    queues = dict(queues)
    if ROOT not in queues:
        queues[ROOT] = QueueInfo(name=ROOT)
    for name in sorted(queues):
        attr = tree.attrs[name] = _new_attr(queues[name])
        attr.capability = queues[name].capability.clone() if queues[name].capability else Resource.empty()
        if name == ROOT:
            continue
        ancestors, cycle = _ancestors(queues, name)
        if cycle is not None:
            text = " -> ".join(cycle)
            tree.broken[name] = f"queue {name} is in or under a cycle of the queue hierarchy ({text})"
            msg = f"queue hierarchy has a cycle: {_cycle_text(cycle)}"
            if msg not in tree.warnings:
                tree.warnings.append(msg)
        attr.ancestors = ancestors
    for name, attr in tree.attrs.items():
        if name in tree.broken or name == ROOT:
            continue
        parent = tree.attrs[attr.ancestors[-1]]
        parent.children.append(name)
    specs = {name: attr.deserved.clone() for name, attr in tree.attrs.items()}
    root = tree.attrs[ROOT]
    root.capability, root.real_capability, root.deserved = total.clone(), total.clone(), total.clone()
    specs[ROOT] = total.clone()
    _check_down(tree, root)
    for name, attr in tree.attrs.items():
        if name in tree.broken:
            attr.real_capability = Resource.empty()
        parent = tree.attrs[attr.ancestors[-1]] if attr.ancestors else None
        _finish(tree, attr, specs[name], parent, share=False)
    return tree


def held(tree: CapacityTree, sums: Mapping[str, Parts]) -> dict[str, Parts]:
    """The queues whose jobs count, in the sums' order: leaves outside a cycle (job_valid
    explains the jobs of the others; they count nowhere)."""
    attrs, broken = tree.attrs, tree.broken
    out = {}
    for name, parts in sums.items():
        attr = attrs.get(name)
        if attr is not None and not attr.children and name not in broken:
            out[name] = parts
    return out


def add_job_figures(tree: CapacityTree, sums: Mapping[str, Parts]) -> None:
    """Per queue, its jobs' figures (`sums`, plugins.util.job_figures) to the leaf, then each
    leaf's sums once to every ancestor, not each job's: O(queues x depth), not O(jobs x depth).
    Stored quantities are whole numbers (milli-units, bytes), so the sums are exact in any
    order. Then every share."""
    leaves = [tree.attrs[name] for name in held(tree, sums)]
    for attr in leaves:
        add_contribution(attr, sums[attr.name])
    for attr in leaves:
        parts = (attr.allocated, attr.request, attr.inqueue, attr.elastic)
        for anc in attr.ancestors:
            add_contribution(tree.attrs[anc], parts)
    for attr in tree.attrs.values():
        update_share(attr, best_effort_is_one=True)


def build_hierarchy(ssn: Session) -> CapacityTree:
    """Volcano's buildHierarchicalQueueAttrs from scratch: the structure, then the job figures
    (summed per queue, kept across sessions: plugins.util.job_figures). A session with kept
    state keeps the whole tree instead (capacity/kept_tree.py)."""
    tree = build_structure(ssn.queues, ssn.total_resource)
    add_job_figures(tree, job_sums(ssn, "capacity"))
    return tree


def _inherit(child: Resource, parent: Resource) -> list[str]:
    """Fill the child's unset capability dimensions from the parent's; return their names."""
    names = []
    if child.milli_cpu <= 0:
        child.milli_cpu = parent.milli_cpu
        names.append("cpu")
    if child.memory <= 0:
        child.memory = parent.memory
        names.append("memory")
    for name, v in parent.scalars.items():
        if name not in child.scalars:
            child.scalars[name] = v
            names.append(name)
    return names


def _above(child: Resource, parent: Resource, set_only: bool = False) -> str:
    """ "cpu 80 > 70" for the dimensions where child exceeds parent (beyond tolerance).

    `set_only` skips dimensions the parent leaves unset (0): a parent without a guarantee or a
    deserved makes no promise its children could break.
    """
    ok, names = child.less_equal_with_resources_name(parent, Zero)
    if set_only:
        names = [n for n in names if parent.get(n) > 0]
    if not names:
        return ""
    return ", ".join(f"{n} {format_dim(n, child.get(n))} > {format_dim(n, parent.get(n))}" for n in names)


def _check_down(tree: CapacityTree, root: QueueAttr) -> None:
    """checkHierarchicalQueue, top-down without recursion (deep trees must not overflow)."""
    stack = [root]
    while stack:
        attr = stack.pop()
        kids = [tree.attrs[c] for c in attr.children]
        if not kids:
            continue
        total_guarantee, total_deserved = Resource.empty(), Resource.empty()
        for kid in kids:
            total_guarantee.add(kid.guarantee)
            total_deserved.add(kid.deserved)
            inherited = _inherit(kid.capability, attr.capability)
            tree.explanations.setdefault(kid.name, {})["inherited_capability"] = inherited
            above = _above(kid.capability, attr.capability)
            if above:
                tree.warnings.append(f"queue {kid.name}: capability above its parent {attr.name}'s ({above})")
        if attr.name == ROOT and attr.guarantee.is_empty():
            attr.guarantee = total_guarantee.clone()
        for what, mine, theirs in (("deserved", attr.deserved, total_deserved),
                                   ("guarantee", attr.guarantee, total_guarantee)):
            above = _above(theirs, mine, set_only=True)
            if above:
                tree.warnings.append(f"queue {attr.name}: children's {what} sum above its own ({above})")
        contestable = exceeded_part(attr.real_capability, total_guarantee)
        for kid in kids:
            real = contestable.clone().add(kid.guarantee)
            real.min_dimension_resource(kid.capability, Infinity)
            kid.real_capability = real
        stack.extend(reversed(kids))  # children in name order
    for attr in tree.attrs.values():
        # A capability dimension nobody set (cpu/memory of a broken queue) means unlimited.
        if attr.capability is not None and attr.name in tree.broken:
            attr.capability = effective_capability(attr.capability)


def queue_level(lhs: QueueAttr, rhs: QueueAttr) -> int:
    """Index of the last common ancestor of two queues (Volcano's getQueueLevel)."""
    level = 0
    la, ra = lhs.ancestors, rhs.ancestors
    for i in range(min(len(la), len(ra))):
        if la[i] != ra[i]:
            return level
        level = i
    return level
