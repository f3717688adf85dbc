"""Pure-Python Volcano-style batch scheduler core (no Django). Entry point: `run_session`."""

from typing import Any

__all__ = ["run_session"]


def run_session(snapshot: Any, conf: Any = None) -> Any:
    """Lazy alias of `scheduler_core.scheduler.run_session` (keeps `import scheduler_core` cheap)."""
    from scheduler_core.scheduler import run_session as _run

    return _run(snapshot, conf)
