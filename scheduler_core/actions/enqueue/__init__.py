"""The enqueue action and its own helper modules."""
