"""Victim selection shared by the preempt and reclaim actions."""
