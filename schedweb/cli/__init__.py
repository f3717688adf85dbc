"""schedctl: a vcctl-style command line over schedweb's REST API (standard library and PyYAML only).

Entry point `schedweb.cli.main:main` (console script `schedctl`, or `python -m schedweb.cli`).
"""
