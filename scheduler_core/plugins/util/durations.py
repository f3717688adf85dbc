"""Durations in plugin arguments and job fields, as Go's time.ParseDuration reads them."""

from __future__ import annotations

import re
from typing import Any

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                 "h": 3600.0}
_NUM_UNIT = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)"
_PART = re.compile(_NUM_UNIT)
_DURATION = re.compile(rf"([+-]?)((?:{_NUM_UNIT})+|0)")


def parse_duration(value: Any) -> float:
    """Go `time.ParseDuration` ("1h", "2h30m", "1.5s", "-5m", "0") or a number of seconds.

    Raises ValueError naming the text.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    m = _DURATION.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"invalid duration {value!r}")
    total = float(sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(m.group(2))))
    return -total if m.group(1) == "-" else total
