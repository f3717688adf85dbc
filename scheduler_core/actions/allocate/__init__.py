"""The allocate action and its own helper modules."""
