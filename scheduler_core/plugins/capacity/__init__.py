"""The capacity plugin and its own helper modules."""
