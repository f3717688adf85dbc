"""The queue families of /metrics as text, from the samples the cycle just wrote, re-rendered
only where a queue's figure or count changed.

The prerendered body (schedweb.scheduling.metrics_body) is dominated by the queue families: a
dozen samples per queue and family, thousands of queues. What keeps them cheap:

- `KEPT`: the cycle's process keeps the rows of the samples it committed (as the database gives
  them back: the figures decoded from the JSON text written), so the render after the cycle reads
  no QueueSample row and decodes no JSON. Set on commit only (a rolled-back cycle keeps nothing);
  used only for the cycle the render finds newest, else the rows are read as before.
- `QueueText`: the sample families' text written directly (the bytes `metrics_text.exposition`
  writes for `metrics._queue_families`), kept per queue and part of its row (share, weight,
  overused, each figure) and per family as one column of lines in the rows' order: a part is
  written again only when it differs from the one its lines were written from (a figure the
  writes reused is the very object: schedweb.scheduling.writes keeps them), and a family's text
  is joined again only when one of its lines moved.
- `PodGroupText`: the pod group families alike, a line per queue and phase rewritten only when
  that count moved (the counts say which: schedweb.scheduling.metrics_counts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import is_

from prometheus_client.utils import floatToGoString

from schedweb.scheduling.metrics_text import escape_label_value

Row = tuple  # (queue, share, weight, overused, *metrics.QUEUE_FIGURES values)
CACHE_MAX = 100_000  # queues kept (a bound, not a working size: one entry per queue)
SCALARS = 4  # a row's queue name and scalar columns; its figures follow


class KeptSamples:
    """The QueueSample rows of the newest cycle this process committed."""

    def __init__(self) -> None:
        self.cycle_id: int | None = None
        self.rows: list[Row] = []
        self._order: tuple[tuple[str, ...], dict[str, int]] = ((), {})  # names -> the database's order

    def keep(self, cycle_id: int, rows: list[Row]) -> None:
        """The rows (in any order) of cycle `cycle_id`, committed."""
        self.cycle_id, self.rows = cycle_id, rows

    def rows_of(self, cycle_id: int, order: Callable[[list[str]], list[str]] = sorted) -> list[Row] | None:
        """The rows of that cycle as the database orders them by queue name (`order`: the names
        so ordered; asked again only when the names change); None when they are not kept."""
        if cycle_id != self.cycle_id:
            return None
        names = tuple(row[0] for row in self.rows)
        if names != self._order[0]:
            self._order = (names, {name: i for i, name in enumerate(order(list(names)))})
        position = self._order[1]
        return sorted(self.rows, key=lambda row: position[row[0]])


KEPT = KeptSamples()


def label_of(queue: str) -> str:
    """`{queue_name="..."}`, escaped."""
    return f'{{queue_name="{escape_label_value(queue)}"}}'


def _same_scalar(a: object, b: object) -> bool:
    """Whether two scalars write the same text (equal, and a zero of the same sign)."""
    return a is b or (a == b and (a != 0 or str(a) == str(b)))


def _same_figure(a: object, b: object) -> bool:
    """Whether two figures (dicts of amounts, or None) write the same text."""
    if a is b:
        return True
    return isinstance(a, dict) and a == b and all(v != 0 for v in a.values())  # -0.0 == 0.0


class _Columns:
    """Family -> one text per queue position, and each family's joined text."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.lines: dict[str, list[str]] = {}
        self.joined: dict[str, str] = {}
        self.dirty: set[str] = set()

    def put(self, family: str, index: int, text: str) -> None:
        column = self.lines.get(family)
        if column is None:
            column = self.lines[family] = [""] * self.size
        if column[index] != text:
            column[index] = text
            self.dirty.add(family)

    def texts(self) -> dict[str, str]:
        for family in self.dirty:
            self.joined[family] = "".join(self.lines[family])
        self.dirty.clear()
        return self.joined


class QueueText:
    """Writes the queue sample families; keeps each queue's lines by part and family."""

    def __init__(self, figures: Sequence[str], metrics: Mapping[str, tuple[str, str | None, str]],
                 units: Sequence[tuple[str, str, str]], not_scalars: frozenset[str],
                 limit: str, set_: str, zero: str) -> None:
        self.figures, self.metrics, self.units, self.not_scalars = figures, metrics, units, not_scalars
        self.limit, self.set, self.zero = limit, set_, zero
        # queue -> (the row its parts were written from, its label, part index -> {family: lines})
        self.kept: dict[str, tuple[Row, str, list[dict[str, str]]]] = {}
        self.names: tuple[str, ...] = ()  # the queues of `columns`, in order
        self.columns = _Columns(0)
        self.written = 0  # queues written (not reused) since the start: tests and the benchmark

    def _part(self, index: int, label: str, value: object) -> dict[str, str]:
        """The lines of one part of a queue's row (as metrics._queue_families adds them)."""
        if index == 1:
            return {"volcano_queue_share": f"volcano_queue_share{label} {floatToGoString(value)}\n"}
        if index == 2:
            return {"volcano_queue_weight": f"volcano_queue_weight{label} {floatToGoString(value)}\n"}
        if index == 3:
            return {"volcano_queue_overused": f"volcano_queue_overused{label} {1.0 if value else 0.0}\n"}
        if value is None:
            return {}
        stem, old, reading = self.metrics[self.figures[index - SCALARS]]
        out: dict[str, str] = {}
        for unit, key, _ in self.units:
            amount = float(value.get(key, 0))
            if reading == self.zero or (key in value and (reading == self.set or amount > 0)):
                text = floatToGoString(amount)
                for name in (stem, old) if old else (stem,):
                    out[f"{name}_{unit}"] = f"{name}_{unit}{label} {text}\n"
        family, queue_label = f"{stem}_scalar_resources", label[1:-1]
        lines = [f'{family}{{{queue_label},resource="{escape_label_value(resource)}"}} '
                 f"{floatToGoString(float(value[resource]))}\n"
                 for resource in sorted(set(value) - self.not_scalars)
                 if reading != self.limit or value[resource] > 0]
        if lines:
            out[family] = "".join(lines)
        return out

    def _changed(self, row: Row, old: Row) -> list[int]:
        """The parts of `row` whose text may differ from `old`'s."""
        if row is old or (all(map(is_, row[SCALARS:], old[SCALARS:])) and row[1:SCALARS] == old[1:SCALARS]
                          and row[1] != 0):  # the usual case, in C; a zero share's sign is checked below
            return []
        parts = [i for i in range(1, SCALARS) if not _same_scalar(row[i], old[i])]
        parts += [i for i in range(SCALARS, len(row)) if not _same_figure(row[i], old[i])]
        return parts

    def samples_text(self, rows: Sequence[Row]) -> dict[str, str]:
        """Family name -> its sample lines for these rows, in the rows' order."""
        if len(self.kept) > CACHE_MAX:
            self.kept.clear()
            self.names = ()
        names = tuple(row[0] for row in rows)
        same_queues = names == self.names
        columns = self.columns if same_queues else _Columns(len(rows))
        for index, row in enumerate(rows):
            queue = row[0]
            kept = self.kept.get(queue)
            if kept is None:
                label = label_of(queue)
                changed = range(1, len(row))
                parts: list[dict[str, str]] = [{}, *(self._part(i, label, row[i]) for i in changed)]
                self.written += 1
            else:
                old, label, parts = kept
                changed = self._changed(row, old)
                if changed:
                    self.written += 1
                    for i in changed:
                        before, parts[i] = parts[i], self._part(i, label, row[i])
                        if same_queues:
                            for family in before.keys() - parts[i].keys():
                                columns.put(family, index, "")
                elif same_queues:
                    continue  # kept with the row it was written from: its figures are the same objects
            self.kept[queue] = (row, label, parts)
            for part in parts if not same_queues else (parts[i] for i in changed):
                for family, text in part.items():
                    columns.put(family, index, text)
        self.names, self.columns = names, columns
        return columns.texts()


class PodGroupText:
    """The pod group families' lines (one per queue and exported phase), each rewritten only when
    its count moved."""

    def __init__(self, phases: Sequence[tuple[str, str]]) -> None:
        self.families = {stored: f"volcano_queue_pod_group_{phase}_count" for phase, stored in phases}
        self.source: object = None  # the counts the lines are of
        self.queues: list[tuple[int, str]] = []
        self.position: dict[int, int] = {}
        self.labels: list[str] = []
        self.columns = _Columns(0)

    def texts(self, source: object, queues: list[tuple[int, str]], counts: Mapping[tuple[int, str], int],
              moved: set[tuple[int, str]]) -> dict[str, str]:
        """Family name -> its lines: `queues` (id, name) in order, `counts` by (queue id, phase),
        `moved` the counts changed since the last call with the same `source`."""
        if source is not self.source or queues != self.queues:
            self.source, self.queues = source, list(queues)
            self.position = {pk: i for i, (pk, _) in enumerate(queues)}
            self.labels = [label_of(name) for _, name in queues]
            self.columns = _Columns(len(queues))
            moved = {(pk, stored) for pk, _ in queues for stored in self.families}
            for family in self.families.values():
                self.columns.lines[family] = [""] * len(queues)
                self.columns.dirty.add(family)
        for pk, stored in moved:
            family, index = self.families.get(stored), self.position.get(pk)
            if family is not None and index is not None:
                n = counts.get((pk, stored), 0)
                self.columns.put(family, index, f"{family}{self.labels[index]} {floatToGoString(n)}\n")
        return self.columns.texts()
