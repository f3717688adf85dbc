"""The loop of `manage.py run_scheduler`: a cycle every period, through database outages.

A step that raises (the database locked past its busy timeout, the server gone, or anything
else) does not end the loop: it waits and tries again, the wait doubling from one period up to
BACKOFF_MAX seconds, and closes the process's database connections so the next try opens fresh
ones. An outage is logged once when it starts (with the error) and once when a step succeeds
again (how long it lasted), not once per try.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable

from django.db import connections

logger = logging.getLogger(__name__)

BACKOFF_MAX = 60.0


class Outage:
    """The current run of failed steps: when it began and how many there were."""

    def __init__(self, period: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.period = period
        self.clock = clock
        self.since: float | None = None
        self.failures = 0

    def failed(self, exc: BaseException) -> float:
        """Note a failed step (logged if it starts an outage); the seconds to wait before the next."""
        self.failures += 1
        if self.since is None:
            self.since = self.clock()
            logger.error("scheduler: cycle failed, retrying with back-off until it succeeds: %s: %s",
                         type(exc).__name__, exc, exc_info=exc)
        else:
            logger.debug("scheduler: still failing (%d tries): %s: %s", self.failures, type(exc).__name__,
                         exc)
        return min(self.period * 2 ** (self.failures - 1), max(BACKOFF_MAX, self.period))

    def recovered(self) -> None:
        """A step returned (its cycle ran, or failed and was recorded): log the end of an outage,
        if one was going on."""
        if self.since is not None:
            logger.warning("scheduler: steps run again after %.1f s (%d failed tries)",
                           self.clock() - self.since, self.failures)
        self.since, self.failures = None, 0


def stop_on_signals() -> Callable[[], bool]:
    """A `stopped` for run_loop: true once SIGTERM or SIGINT arrived (the loop ends after its step)."""
    stop = [False]

    def _stop(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    return lambda: stop[0]


def run_loop(step: Callable[[], dict], period: float, *, stopped: Callable[[], bool],
             report: Callable[[dict], None] = lambda summary: None,
             clock: Callable[[], float] = time.monotonic,
             sleep: Callable[[float], None] = time.sleep) -> None:
    """Call `step` every `period` seconds until `stopped()`; a step that overruns its period
    starts the next at once, a failed one waits as Outage says. Sleeps in slices of at most 0.2 s
    so a stop request ends the loop promptly."""
    outage = Outage(period, clock)
    while not stopped():
        began = clock()
        try:
            summary = step()
        except Exception as exc:  # never exits: the next try may find the database back
            connections.close_all()
            deadline = clock() + outage.failed(exc)
        else:
            outage.recovered()
            report(summary)
            deadline = began + period
        while not stopped() and clock() < deadline:
            sleep(min(0.2, max(0.0, deadline - clock())))
