"""The sla plugin and its own helper modules."""
