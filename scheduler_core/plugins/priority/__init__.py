"""The priority plugin and its own helper modules."""
