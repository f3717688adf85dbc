"""Write services of the staff-managed settings: priority classes, namespace quotas and the
scheduler configuration; re-exported by schedweb.core.services (import them there)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from schedweb.audit.models import AuditAction, AuditObjectType
from schedweb.core import snapshots
from schedweb.core.models import NamespaceQuota, PreemptionPolicy, PriorityClass, SchedulerConfig
from schedweb.core.service_base import UNSET, FieldChecks, audit, check_unique_name, field_check
from schedweb.core.validation import (
    check_choice,
    check_int,
    check_namespace,
    check_text,
    fail,
    parse_resources,
)
from schedweb.core.yaml_budget import check_yaml_budget

# --------------------------------------------------------------------------- priority classes


def _check_global_default(value: Any, pc: PriorityClass | None) -> bool:
    """Kubernetes' rule: at most one class is the global default (the constraint backs it up)."""
    if not isinstance(value, bool):
        raise fail("global_default", "Expected true or false.")
    if value:
        other = PriorityClass.objects.select_for_update().filter(global_default=True)
        other = other.exclude(pk=pc.pk).first() if pc is not None else other.first()
        if other is not None:
            raise fail("global_default", f"PriorityClass {other.name!r} is already marked as default. "
                                         "Only one default can exist.")
    return value


# Each column of a priority class and its check, in the order create and update validate them.
PRIORITY_CLASS_CHECKS = FieldChecks({
    "name": lambda value, pc: check_unique_name(PriorityClass, "priority class", value, pc),
    "value": field_check(check_int, "value"),
    "preemption_policy": field_check(check_choice, "preemption_policy", choices=PreemptionPolicy.values),
    "description": field_check(check_text, "description", multiline=True),
    "global_default": _check_global_default,
})


@transaction.atomic
def priority_class_create(*, name: str, value: int,
                          preemption_policy: str = PreemptionPolicy.PREEMPT_LOWER_PRIORITY,
                          description: str = "", global_default: bool = False,
                          actor: Any = None) -> PriorityClass:
    """Create a priority class; `global_default` makes it the class of jobs submitted without one."""
    pc = PriorityClass.objects.create(**PRIORITY_CLASS_CHECKS.for_create(
        name=name, value=value, preemption_policy=preemption_policy, description=description,
        global_default=global_default))
    audit(AuditAction.CREATE, AuditObjectType.PRIORITY_CLASS, pc.name, None,
          snapshots.priority_class_snapshot(pc), actor)
    return pc


@transaction.atomic
def priority_class_update(*, priority_class: PriorityClass, name: Any = UNSET, value: Any = UNSET,
                          preemption_policy: Any = UNSET, description: Any = UNSET,
                          global_default: Any = UNSET, actor: Any = None) -> PriorityClass:
    """Change the given fields of a priority class."""
    pc = PriorityClass.objects.select_for_update().get(pk=priority_class.pk)
    before = snapshots.priority_class_snapshot(pc)
    PRIORITY_CLASS_CHECKS.apply(pc, name=name, value=value, preemption_policy=preemption_policy,
                                description=description, global_default=global_default)
    pc.save()
    audit(AuditAction.UPDATE, AuditObjectType.PRIORITY_CLASS, pc.name, before,
          snapshots.priority_class_snapshot(pc), actor)
    return pc


@transaction.atomic
def priority_class_delete(*, priority_class: PriorityClass, actor: Any = None) -> None:
    """Delete a priority class that no job uses."""
    used = priority_class.jobs.count()
    if used:
        raise fail("priority_class", f"Priority class {priority_class.name!r} is used by {used} job(s).")
    before = snapshots.priority_class_snapshot(priority_class)
    priority_class.delete()
    audit(AuditAction.DELETE, AuditObjectType.PRIORITY_CLASS, before["name"], before, None, actor)


# --------------------------------------------------------------------------- quotas and config

@transaction.atomic
def namespace_quota_set(*, namespace: str, hard: Any, actor: Any = None) -> NamespaceQuota | None:
    """Set (create or replace) a namespace's hard quota; hard=None removes it (returns None)."""
    check_namespace(namespace)
    old = NamespaceQuota.objects.select_for_update().filter(namespace=namespace).first()
    before = snapshots.namespace_quota_snapshot(old) if old is not None else None
    quota = None
    if hard is None:
        NamespaceQuota.objects.filter(namespace=namespace).delete()
    else:
        stored = parse_resources(hard, "hard")
        quota, _ = NamespaceQuota.objects.update_or_create(namespace=namespace, defaults={"hard": stored})
    after = snapshots.namespace_quota_snapshot(quota) if quota is not None else None
    if before is not None or after is not None:
        action = (AuditAction.CREATE if before is None else AuditAction.DELETE if after is None
                  else AuditAction.UPDATE)
        audit(action, AuditObjectType.NAMESPACE_QUOTA, namespace, before, after, actor)
    return quota


@transaction.atomic
def scheduler_config_activate(*, yaml: str, comment: str = "", created_by=None,
                              actor: Any = None) -> SchedulerConfig:
    """Store `yaml` as a new version and make it the only active one (validated by parse_conf).

    The audit entry's actor is `actor`, else `created_by`."""
    from scheduler_core.framework.conf import ConfError, parse_conf

    if not isinstance(yaml, str) or not yaml.strip():
        raise fail("yaml", "The configuration is empty.")
    check_text(yaml, "yaml", multiline=True)
    check_yaml_budget(yaml, "yaml")
    comment = check_text(comment, "comment", multiline=True)
    try:
        parse_conf(yaml)
    except (ConfError, ValueError) as exc:
        raise fail("yaml", str(exc)) from None
    except Exception as exc:  # a YAML syntax error of any kind is the user's input error
        raise fail("yaml", f"Not valid YAML: {exc}") from None
    # Lock the current active row so two activations serialize on it.
    previous = list(SchedulerConfig.objects.select_for_update().filter(active=True))
    SchedulerConfig.objects.filter(active=True).update(active=False)
    version = (SchedulerConfig.objects.aggregate(v=Max("version"))["v"] or 0) + 1
    config = SchedulerConfig.objects.create(version=version, yaml=yaml, active=True,
                                            comment=(comment or "")[:500], created_by=created_by)
    before = snapshots.scheduler_config_snapshot(previous[0]) if previous else None
    audit(AuditAction.ACTIVATE, AuditObjectType.SCHEDULER_CONFIG, f"v{version}", before,
          snapshots.scheduler_config_snapshot(config), actor or created_by)
    return config
