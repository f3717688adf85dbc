"""`python -m schedctl ...`: the same as the `schedctl` console script."""

from __future__ import annotations

from schedctl.main import main

raise SystemExit(main())
