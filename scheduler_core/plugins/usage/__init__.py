"""The usage plugin and its own helper modules."""
