"""`manage.py forecast`: compute the estimated start of every waiting job once, now."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from schedweb.scheduling.forecast_task import run_forecast, summary


class Command(BaseCommand):
    """Run schedweb.scheduling.forecast_task.run_forecast() once and print what it did."""

    help = ("Forecast the start of every waiting job now (the scheduler does it after every "
            "FORECAST_EVERY_CYCLES-th cycle) and store the estimates.")

    def add_arguments(self, parser: Any) -> None:
        """--json."""
        parser.add_argument("--json", action="store_true", help="print the run as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        """One run; a failed run is an error (exit 1) with its message."""
        run = run_forecast()
        out = summary(run)
        if run.errors:
            raise CommandError(f"forecast failed: {run.errors}")
        if options.get("json"):
            self.stdout.write(json.dumps(out, sort_keys=True))
            return
        until = f"until {out['until']}" if out["until"] else "nothing to simulate"
        which = out["forecast"] or "(superseded by a newer one)"
        self.stdout.write(f"forecast {which}: {out['jobs']} waiting job(s), {out['cycles']} cycle(s) "
                          f"simulated {until} (stopped: {out['stop']}); load {out['load_s']} s, "
                          f"forecast {out['forecast_s']} s, store {out['store_s']} s")
