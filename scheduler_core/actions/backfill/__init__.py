"""The backfill action and its own helper modules."""
