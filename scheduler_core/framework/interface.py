"""The two small interfaces (Plugin, Action) and the value types callbacks exchange."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scheduler_core.framework.conf import PluginOption
    from scheduler_core.framework.session import Session
    from scheduler_core.model import TaskInfo


class Plugin:
    """A policy: registers callbacks on the session when it opens.

    `name` is the name the configuration uses; the class is registered by being listed in
    plugins/factory.py. Besides its callbacks a plugin declares what the web and the explanations
    read about it (from the registry or the session's plugins, never by plugin name):
    `score_hint`, what a node-order plugin rewards in a few words; `limit_figure`, for a queue
    plugin, the QueueFigures field allocate measures a queue's room against (declaring one makes
    a queue plugin: it reports `result.queues` and keeps `queue_opts`, queue name -> an object
    with `ancestors`, root first, while the session is open); `ceiling_figures`, for a queue
    plugin, the QueueFigures fields whose per-dimension maximum a queue can never get past (the
    first one required); `explanation_form`, the form of its queue explanation JSON;
    `ignored_queue_fields`.
    """

    name: str = ""
    score_hint: str = ""
    limit_figure: str = ""
    ceiling_figures: tuple[str, ...] = ()
    explanation_form: str = ""

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        self.arguments: dict[str, Any] = dict(arguments or {})

    @classmethod
    def check_arguments(cls, arguments: dict[str, Any]) -> list[str]:
        """Problems with arguments whose bad values would change scheduling silently (parse_conf
        refuses the configuration naming them); none by default."""
        return []

    @classmethod
    def ignored_queue_fields(cls, option: PluginOption, *, is_leaf: bool) -> dict[str, str] | None:
        """For a queue plugin: {queue field: why it has no effect} on a leaf or parent queue under
        this configured `option`; None for a plugin that shares no queues (the default)."""
        return None

    def on_session_open(self, ssn: Session) -> None:
        """Register callbacks (ssn.add_*_fn(self.name, ...)) and compute per-session state.

        Timed by the session: `result.timing["plugin_<name>_open_s"]`."""

    def on_session_close(self, ssn: Session) -> None:
        """Report figures into ssn.result; drop per-session state (timed: `plugin_<name>_close_s`)."""


class Action:
    """A verb: one step of the cycle (enqueue, allocate, ...)."""

    name: str = ""

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        self.arguments: dict[str, Any] = dict(arguments or {})

    def execute(self, ssn: Session) -> None:
        """Run the action against the open session."""
        raise NotImplementedError


@dataclass(slots=True)
class Event:
    """What an event handler receives: the task that was (de)allocated."""

    task: TaskInfo


@dataclass(slots=True)
class EventHandler:
    """Per-plugin hooks fired on allocate/pipeline (allocate_func) and evict/discard (deallocate_func).

    `allocate_batch_func(events)`, when given, stands for `allocate_func` called on each event in
    order (allocate places a run of identical tasks on one node in one step): it must leave the
    plugin exactly as those calls would. Without it the session calls `allocate_func` per event.
    """

    allocate_func: Callable[[Event], None] | None = None
    deallocate_func: Callable[[Event], None] | None = None
    allocate_batch_func: Callable[[list[Event]], None] | None = None


@dataclass(slots=True)
class ValidateResult:
    """Answer of a job-valid callback; `passed=False` leaves the job out of all actions."""

    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class PredicateResult:
    """Combined predicate answer over NodeTable rows.

    `ok_mask[i]` is True when row i passes every enabled predicate; `failures` lists
    (reason, mask) where each failing row appears once, under the first predicate that failed it.
    """

    ok_mask: np.ndarray
    failures: list[tuple[str, np.ndarray]] = field(default_factory=list)

    @property
    def reasons(self) -> list[tuple[str, np.ndarray]]:
        """Alias of `failures` (the name used in the architecture table)."""
        return self.failures

    def counts(self) -> dict[str, int]:
        """Number of failing rows per reason."""
        return {reason: int(mask.sum()) for reason, mask in self.failures}

    @classmethod
    def combine(cls, seq: list[tuple[str, np.ndarray, bool]], n: int) -> PredicateResult:
        """The answer over n rows of `Session.predicate_sequence`'s masks (read-only arrays):
        each row blamed on the first mask that fails it; a mask listed only when it blames a
        row, or when it says it is always listed (the hard shard's)."""
        ok = np.ones(n, dtype=bool)
        failures: list[tuple[str, np.ndarray]] = []
        for reason, mask, always in seq:
            if always:
                failures.append((reason, mask))
                ok &= ~mask
                continue
            eff = mask & ok
            if eff.any():
                eff.flags.writeable = False
                failures.append((reason, eff))
                ok &= ~mask
        ok.flags.writeable = False
        return cls(ok, failures)
