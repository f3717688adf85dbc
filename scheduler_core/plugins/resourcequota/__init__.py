"""The resourcequota plugin and its own helper modules."""
