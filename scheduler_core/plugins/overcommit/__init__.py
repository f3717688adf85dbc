"""The overcommit plugin and its own helper modules."""
