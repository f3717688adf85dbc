"""The drf plugin and its own helper modules."""
