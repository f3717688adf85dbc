"""The conformance plugin and its own helper modules."""
