"""`manage.py shard_controller [--once]`: the sharding controller in-process (no broker needed)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from schedweb.scheduling.loop import run_loop, stop_on_signals
from schedweb.scheduling.shard_controller import controller_step


class Command(BaseCommand):
    """Run controller_step() every SHARD_CONTROLLER_PERIOD seconds; a failing step (the database
    gone) never ends the loop (schedweb.scheduling.loop retries with back-off)."""

    help = "Assign nodes to NodeShards every SHARD_CONTROLLER_PERIOD seconds (or once with --once)."

    def add_arguments(self, parser: Any) -> None:
        """--once, --period."""
        parser.add_argument("--once", action="store_true", help="run one step and exit")
        parser.add_argument("--period", type=float, default=None, help="seconds between steps")

    def handle(self, *args: Any, once: bool = False, period: float | None = None, **options: Any) -> None:
        """Loop until SIGTERM/SIGINT (--once: one step, whose error is the command's)."""
        period = float(period or settings.SHARD_CONTROLLER_PERIOD)
        if once:
            self.stdout.write(str(controller_step()))
            return
        stopped = stop_on_signals()
        verbose = options.get("verbosity", 1) > 1
        run_loop(controller_step, period, stopped=stopped,
                 report=lambda summary: (verbose or summary["changed"]) and self.stdout.write(str(summary)))
