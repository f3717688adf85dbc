"""gunicorn settings for schedweb's web workers (`gunicorn -c python:schedweb.gunicorn_conf`).

The web workers give way to the scheduler on a shared host: each worker lowers its CPU priority
by WEB_NICE (default 5) right after the fork, before it starts its threads (which inherit it).
A client flooding the API then slows the API's answers first, not the scheduling cycle every
tenant waits on: under contention the kernel gives a nice-0 scheduler about three times a
nice-5 worker's share; with idle cores nothing changes. 0 keeps the default priority.
"""

from __future__ import annotations

import os
from typing import Any


def web_nice(environ: dict[str, str] | None = None) -> int:
    """WEB_NICE as an int in 0..19 (ValueError naming the variable otherwise)."""
    raw = (os.environ if environ is None else environ).get("WEB_NICE", "5").strip()
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"WEB_NICE must be an integer from 0 to 19, not {raw!r}") from None
    if not 0 <= value <= 19:
        raise ValueError(f"WEB_NICE must be an integer from 0 to 19, not {raw!r}")
    return value


def post_fork(server: Any, worker: Any) -> None:
    """gunicorn hook: lower this worker's priority (see the module docstring)."""
    step = web_nice()
    if step:
        os.nice(step)


# Checked when gunicorn loads this file: a bad value stops the server before it forks.
web_nice()
