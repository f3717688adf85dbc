"""`python -m schedweb.cli ...`: the same as the `schedctl` console script."""

from __future__ import annotations

from schedweb.cli.main import main

raise SystemExit(main())
