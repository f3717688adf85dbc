"""The binpack plugin and its own helper modules."""
