"""Which queue fields the active scheduler configuration ignores, and why (issue 16, item 3).

One function, `ignored_fields(conf, is_leaf=...)`, derives it from the configuration's queue
plugins and their flags, each plugin saying which fields it ignores and why
(`Plugin.ignored_queue_fields`); the queue page and the edit form print the sentence next to the
field. Today's plugins answer:

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
from scheduler_core.framework.registry import plugin_classes

QUEUE_FIELDS = ("weight", "priority", "capability", "deserved", "guarantee", "reclaimable")


def queue_plugins() -> list[str]:
    """Registered queue plugins (those declaring a limit figure), in registration order."""
    return [name for name, cls in plugin_classes().items() if getattr(cls, "limit_figure", "")]


def _plugin_answers(conf: SchedulerConf, is_leaf: bool) -> list[dict[str, str]]:
    # Each configured queue plugin says which fields it ignores (Plugin.ignored_queue_fields).
    answers = []
    for tier in conf.tiers:
        for option in tier.plugins:
            cls = plugin_classes().get(option.name)
            said = cls.ignored_queue_fields(option, is_leaf=is_leaf) if cls is not None else None
            if said is not None:
                answers.append(said)
    return answers


def ignored_fields(conf: SchedulerConf, *, is_leaf: bool) -> dict[str, str]:
    """{field: why it has no effect} for a leaf or parent queue under `conf` (see the module doc)."""
    answers = _plugin_answers(conf, is_leaf)
    if answers:
        ignored = dict(answers[0])
        for other in answers[1:]:
            ignored = {f: why for f, why in ignored.items() if f in other}
    else:
        why = (f"The active configuration enables no queue plugin ({' or '.join(queue_plugins())}): "
               "queue {field} has no effect.")
        ignored = {f: why.format(field=f) for f in QUEUE_FIELDS if f != "reclaimable"}
    if "reclaim" not in conf.actions:
        ignored["reclaimable"] = ("The active configuration runs no reclaim action: nothing is reclaimed "
                                  "from any queue, reclaimable or not.")
    return {f: ignored[f] for f in QUEUE_FIELDS if f in ignored}


def active_ignored_fields(*, is_leaf: bool) -> dict[str, str]:
    """`ignored_fields` under the configuration the next cycle uses (schedweb.scheduling.cycle)."""
    from schedweb.scheduling.cycle import active_conf

    return ignored_fields(active_conf()[1], is_leaf=is_leaf)
