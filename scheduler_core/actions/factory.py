"""The one list of actions (as upstream's actions/factory.go): the registry is filled from it.

A new action is one import and one entry here; nothing else discovers actions.
"""

from __future__ import annotations

from scheduler_core.actions.allocate.allocate import AllocateAction
from scheduler_core.actions.backfill.backfill import BackfillAction
from scheduler_core.actions.enqueue.enqueue import EnqueueAction
from scheduler_core.actions.preempt.preempt import PreemptAction
from scheduler_core.actions.reclaim.reclaim import ReclaimAction
from scheduler_core.framework.interface import Action

# The one registration: the registry is filled from this list, each class under its `name`.
ACTIONS: tuple[type[Action], ...] = (
    AllocateAction,
    BackfillAction,
    EnqueueAction,
    PreemptAction,
    ReclaimAction,
)
