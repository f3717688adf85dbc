"""Scheduler actions, one package each; `factory.py` is the one list of those the scheduler runs.

Helper modules (an action's own sub-modules, `util/`, `victims/`) are never loaded as actions.
"""
