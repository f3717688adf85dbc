"""Which queue fields the active scheduler configuration ignores, and why (issue 16, item 3).

One function, `ignored_fields(conf, is_leaf=...)`, derives it from the configuration's queue
plugins and their flags; the queue page and the edit form print the sentence next to the field:

- no queue plugin (neither `proportion` nor `capacity`): weight, priority, deserved, guarantee
  and capability are all ignored;
- `proportion` (always flat): a parent's weight, capability, guarantee and deserved; every
  queue's configured deserved (proportion computes deserved from the weights);
- `capacity` without `enableHierarchy`: a parent's weight, capability, guarantee and deserved;
  every queue's weight (capacity shares by deserved);
- `capacity` with `enableHierarchy`: every queue's weight;
- both plugins: a field is ignored only when both ignore it;
- `reclaimable`: ignored when the configuration runs no `reclaim` action.
"""

from __future__ import annotations

from scheduler_core.framework.conf import SchedulerConf

QUEUE_FIELDS = ("weight", "priority", "capability", "deserved", "guarantee", "reclaimable")
SHARE_FIELDS = ("weight", "capability", "guarantee", "deserved")


def _proportion(is_leaf: bool) -> dict[str, str]:
    if not is_leaf:
        why = ("The active configuration uses the flat proportion plugin, which shares among the queues "
               "that hold jobs: a parent queue's {field} has no effect.")
        return {f: why.format(field=f) for f in SHARE_FIELDS}
    return {"deserved": ("The active configuration uses the proportion plugin, which computes deserved "
                         "from the weights: the configured deserved has no effect.")}


def _capacity(is_leaf: bool, hierarchy: bool) -> dict[str, str]:
    weight = ("The active configuration uses the capacity plugin, which shares by deserved: weight has "
              "no effect.")
    if hierarchy or is_leaf:
        return {"weight": weight}
    why = ("The active configuration uses the capacity plugin without enableHierarchy, which treats queues "
           "as flat: a parent queue's {field} has no effect.")
    return {f: why.format(field=f) for f in SHARE_FIELDS}


def ignored_fields(conf: SchedulerConf, *, is_leaf: bool) -> dict[str, str]:
    """{field: why it has no effect} for a leaf or parent queue under `conf` (see the module doc)."""
    answers: list[dict[str, str]] = []
    if conf.plugin("proportion") is not None:
        answers.append(_proportion(is_leaf))
    capacity = conf.plugin("capacity")
    if capacity is not None:
        answers.append(_capacity(is_leaf, capacity.enabled("enableHierarchy")))
    if answers:
        ignored = dict(answers[0])
        for other in answers[1:]:
            ignored = {f: why for f, why in ignored.items() if f in other}
    else:
        why = ("The active configuration enables no queue plugin (proportion or capacity): queue {field} "
               "has no effect.")
        ignored = {f: why.format(field=f) for f in QUEUE_FIELDS if f != "reclaimable"}
    if "reclaim" not in conf.actions:
        ignored["reclaimable"] = ("The active configuration runs no reclaim action: nothing is reclaimed "
                                  "from any queue, reclaimable or not.")
    return {f: ignored[f] for f in QUEUE_FIELDS if f in ignored}


def active_ignored_fields(*, is_leaf: bool) -> dict[str, str]:
    """`ignored_fields` under the configuration the next cycle uses (schedweb.scheduling.cycle)."""
    from schedweb.scheduling.cycle import active_conf

    return ignored_fields(active_conf()[1], is_leaf=is_leaf)
