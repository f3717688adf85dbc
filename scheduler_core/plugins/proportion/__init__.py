"""The proportion plugin and its own helper modules."""
