"""Audit log: who changed which queue, node, priority class, quota or scheduler config, and how."""
