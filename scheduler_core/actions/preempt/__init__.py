"""The preempt action and its own helper modules."""
