"""explain/'s hooks into a session (framework.hooks): reasons at close, per-node score recording."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.explain.node_scores import ScoreRecorder, top_count
from scheduler_core.explain.reasons import build_reasons
from scheduler_core.framework.hooks import SessionHooks

if TYPE_CHECKING:
    from scheduler_core.framework.session import Session


def score_recorder(ssn: Session, record_scores: bool | int) -> ScoreRecorder | None:
    """A recorder keeping the top `top_count(record_scores)` nodes per try (None when off)."""
    top = top_count(record_scores)
    return ScoreRecorder(ssn, top) if top else None


EXPLAIN = SessionHooks(reasons=build_reasons, scores=score_recorder)
