"""schedctl: a vcctl-style command line over schedweb's REST API (standard library and PyYAML only).

Entry point `schedctl.main:main` (console script `schedctl`, or `python -m schedctl`).
"""
