"""The reclaim action and its own helper modules."""
