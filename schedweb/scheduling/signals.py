"""Signals the scheduling cycle sends, so other apps react without the cycle importing them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent by cycle_run after its transaction ended (committed, skipped or failed), from the cycle's
# process. Receivers must not raise (the API prebuilds readers' bodies for the new data version).
cycle_finished = Signal()
