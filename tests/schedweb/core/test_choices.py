"""schedweb.core.choices: each set of stored values, exactly, in the order pages and filters list it."""

from __future__ import annotations

import pytest

from scheduler_core import model as scheduler_model
from schedweb.core import choices


@pytest.mark.parametrize(("name", "expected"), [
    ("TASK_STATUSES", ("Pending", "Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing",
                       "Succeeded", "Failed")),
    ("JOB_PHASES", ("Pending", "Inqueue", "Running", "Unknown", "Completed", "Cancelled", "Aborted")),
    ("ALLOCATED_TASK_STATUSES", ("Allocated", "Binding", "Bound", "Running")),
    ("WAITING_TASK_STATUSES", ("Pending", "Pipelined")),
    ("NODE_BOUND_TASK_STATUSES", ("Allocated", "Pipelined", "Binding", "Bound", "Running", "Releasing")),
    ("TERMINAL_TASK_STATUSES", ("Succeeded", "Failed")),
    ("WAITING_JOB_PHASES", ("Pending", "Inqueue")),
    ("TERMINAL_JOB_PHASES", ("Completed", "Cancelled")),
])
def test_sets(name: str, expected: tuple[str, ...]) -> None:
    assert tuple(str(v) for v in getattr(choices, name)) == expected


def test_state_groups() -> None:
    assert {k: tuple(map(str, v)) for k, v in choices.JOB_STATE_GROUPS.items()} == {
        "waiting": ("Pending", "Inqueue"), "finished": ("Completed", "Cancelled"), "suspended": ("Aborted",)}


def test_allocated_is_the_schedulers_set() -> None:
    assert set(choices.ALLOCATED_TASK_STATUSES) == {s.value for s in scheduler_model.ALLOCATED_STATUSES}
