"""What a caller adds to a session from above the framework: explanations and score recording.

The framework never imports explain/: `scheduler.run_session` passes explain's hooks
(explain.session_hooks.EXPLAIN) to `open_session`; a session opened without hooks records
nothing extra and builds no reasons (its decisions are the same).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from scheduler_core.model import TaskInfo
    from scheduler_core.result import SessionResult


class ScoreSink(Protocol):
    """Per-node score recording of the placement decisions (explain.node_scores.ScoreRecorder).

    What the framework and run_session call; the placing actions also call its `record_*` methods.
    """

    action: str

    def placing(self, task: TaskInfo, node_name: str, pipelined: bool) -> None:
        """The try's task is placed on `node_name` (before the node changes)."""

    def finish(self, result: SessionResult) -> Any:
        """The recorded scores for `result.node_scores`, at close."""


@dataclass(frozen=True, slots=True)
class SessionHooks:
    """`reasons(ssn)`: the reasons of `result.reasons`, at close; `scores(ssn, record_scores)`:
    the score sink for a truthy `record_scores` (None = no recording)."""

    reasons: Callable[[Any], dict[str, Any]] | None = None
    scores: Callable[[Any, bool | int], ScoreSink | None] | None = None


NO_HOOKS = SessionHooks()
