"""`manage.py run_scheduler [--once] [--shard NAME]`: the scheduling loop in-process (no broker
needed), of the unsharded instance or of one shard's (schedweb.scheduling.shard_runtime)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from schedweb.scheduling.forecast_task import after_cycle
from schedweb.scheduling.loop import run_loop, stop_on_signals
from schedweb.scheduling.tasks import cycle_and_agent


class Command(BaseCommand):
    """Run cycle_run() (and the simulated agent when enabled) every SCHEDULE_PERIOD seconds; the
    forecast after every FORECAST_EVERY_CYCLES-th cycle. A failing cycle (the database locked or
    gone) never ends the loop: it retries with back-off (schedweb.scheduling.loop)."""

    help = "Run the scheduling cycle every SCHEDULE_PERIOD seconds (or once with --once)."

    def add_arguments(self, parser: Any) -> None:
        """--once, --period."""
        parser.add_argument("--once", action="store_true", help="run one cycle and exit")
        parser.add_argument("--period", type=float, default=None, help="seconds between cycles")
        parser.add_argument("--shard", default="", help="run the instance of this NodeShard (by name)")

    def handle(self, *args: Any, once: bool = False, period: float | None = None, shard: str = "",
               **options: Any) -> None:
        """Loop until SIGTERM/SIGINT (--once: one step, whose error is the command's)."""
        period = float(period or settings.SCHEDULE_PERIOD)
        self._shard = shard
        verbose = options.get("verbosity", 1) > 1
        if once:
            self._report(self._step(), verbose)
            return
        stopped = stop_on_signals()
        run_loop(self._step, period, stopped=stopped,
                 report=lambda summary: self._report(summary, verbose))

    _shard = ""

    def _step(self) -> dict:
        summary = cycle_and_agent(self._shard)
        # No broker here: every FORECAST_EVERY_CYCLES-th cycle the forecast runs in-process,
        # after the cycle has committed (it never raises).
        if forecast := after_cycle(summary, inline=True):
            summary["forecast"] = forecast
        return summary

    def _report(self, summary: dict, verbose: bool) -> None:
        if verbose or summary["binds"] or summary["errors"]:
            self.stdout.write(str(summary))
