"""A cycle's queue samples as plain rows, and their COPY text kept per queue while it holds.

A cycle writes one QueueSample per queue (1,111 at the L benchmark) and most queues' figures
and explanation equal the last cycle's. A Django model instance per queue, and the driver
formatting fifteen columns of each, cost more than the database's own work; so the cycle builds
`Sample`s (slots objects with QueueSample's field names) and `copy_lines` turns them into COPY
text. Each JSON column's text is reused while the value compares equal to the one last written
for that queue and column (kept decoded from its text, not as the caller's object: a plugin may
change an explanation in place), and a queue's line from the JSON columns on is reused whole when
every column is. The text is PostgreSQL's COPY text format, each value as psycopg's text dumpers
give it and escaped as psycopg escapes a row (`psycopg._copy_base`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

from scheduler_core.result import FIGURE_NAMES, SessionResult
from schedweb.scheduling.adapter import figures_json

SAMPLE_COLUMNS = ("cycle_id", "queue", "created", "deserved", "allocated", "request", "inqueue", "elastic",
                  "capability", "real_capability", "guarantee", "share", "weight", "overused", "explanation")
JSON_COLUMNS = (*FIGURE_NAMES, "explanation")  # in SAMPLE_COLUMNS order
_json_values = attrgetter(*JSON_COLUMNS)
assert SAMPLE_COLUMNS[3:11] == FIGURE_NAMES


@dataclass(slots=True)
class Sample:
    """One queue's figures in one cycle, as QueueSample stores them (stored units)."""

    cycle_id: int
    queue: str
    created: datetime
    deserved: dict | None = None
    allocated: dict | None = None
    request: dict | None = None
    inqueue: dict | None = None
    elastic: dict | None = None
    capability: dict | None = None
    real_capability: dict | None = None
    guarantee: dict | None = None
    share: float = 0.0
    weight: int = 1
    overused: bool = False
    explanation: dict | None = None

    def fields(self) -> dict[str, Any]:
        """The QueueSample fields (SAMPLE_COLUMNS) and their values."""
        return {name: getattr(self, name) for name in SAMPLE_COLUMNS}


_figures = attrgetter(*FIGURE_NAMES)


def samples_of(result: SessionResult, cycle_id: int, created: datetime) -> list[Sample]:
    """The samples of the queues the session's queue plugin reported, by queue name."""
    explanations = result.explanations
    out = []
    for name in sorted(result.queues):
        fig = result.queues[name]
        out.append(Sample(cycle_id, name, created, *map(figures_json, _figures(fig)), share=float(fig.share),
                          weight=fig.weight, overused=bool(fig.overused), explanation=explanations.get(name)))
    return out


# psycopg's COPY text escapes (psycopg._copy_base._dump_repl).
_ESCAPES = str.maketrans({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r",
                          "\\": "\\\\"})
_SPECIAL = re.compile("[\b\t\n\v\f\r\\\\]")
NULL = "\\N"


def copy_field(text: str | None) -> str:
    """One field of a COPY text row (None: NULL)."""
    if text is None:
        return NULL
    return text if _SPECIAL.search(text) is None else text.translate(_ESCAPES)


@dataclass(slots=True)
class _Kept:
    """What was last written for one queue: the JSON columns (decoded from their text) and their
    COPY fields, share, weight and overused as text, the line from the JSON columns on, the
    decoded map."""

    queue: str
    values: tuple
    fields: tuple
    scalars: tuple[str, str, str]
    tail: str
    decoded: dict[str, object]


_kept: dict[str, _Kept] = {}
KEPT_MAX = 100_000  # queues (a bound, not a working size)


def forget() -> None:
    """Drop the kept texts (tests; the next samples are all written afresh, the same text)."""
    _kept.clear()


def copy_lines(samples: list[Any]) -> Iterator[tuple[str, dict[str, object]]]:
    """Each sample's (Sample or QueueSample) COPY text line (SAMPLE_COLUMNS) and its JSON columns
    as the database gives them back (decoded from the text written), as they are worked out (the
    writer sends them while the next are made)."""
    if len(_kept) > KEPT_MAX:
        _kept.clear()
    created_text: tuple[object, str] = (None, "")
    for sample in samples:
        values = _json_values(sample)
        share = float(sample.share)  # psycopg's text of a float, int and bool
        scalars = (str(share), str(sample.weight), "t" if sample.overused else "f")
        kept = _kept.get(sample.queue)
        if kept is None or kept.values != values or kept.scalars != scalars:
            kept = _kept[sample.queue] = _line(sample.queue, values, scalars, kept)
        if created_text[0] is not sample.created:
            created_text = (sample.created, copy_field(str(sample.created)))
        yield f"{sample.cycle_id}\t{kept.queue}\t{created_text[1]}\t{kept.tail}\n", kept.decoded


def _line(queue: str, values: tuple, scalars: tuple[str, str, str], last: _Kept | None) -> _Kept:
    decoded, fields = [], []
    for i, value in enumerate(values):
        if last is not None and last.values[i] == value:
            decoded.append(last.values[i])
            fields.append(last.fields[i])
            continue
        text = None if value is None else json.dumps(value)
        decoded.append(None if text is None else json.loads(text))
        fields.append(copy_field(text))
    tail = "\t".join([*fields[:-1], *scalars, fields[-1]])
    return _Kept(copy_field(queue), tuple(decoded), tuple(fields), scalars, tail,
                 dict(zip(JSON_COLUMNS, decoded, strict=True)))
