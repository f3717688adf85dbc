"""The predicates plugin and its own helper modules."""
