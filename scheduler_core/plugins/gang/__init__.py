"""The gang plugin and its own helper modules."""
