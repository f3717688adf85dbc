"""Scheduler plugins, one package each; `factory.py` is the one list of those the scheduler builds.

Helper modules (a plugin's own sub-modules, `util/`) are never loaded as plugins.
"""
