"""Signals the scheduling cycle sends, so other apps react without the cycle importing them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by cycle_run after its transaction ended (committed, skipped or failed), from the cycle's
# process, with `run`: the cycle's CycleRun when it ran (None when it failed). Receivers must not
# raise (the API prebuilds readers' bodies for the new data version, timed in the run's timing).
cycle_finished = Signal()
