"""The nodeorder plugin and its own helper modules."""
