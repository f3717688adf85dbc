"""The rescheduling plugin and its own helper modules."""
