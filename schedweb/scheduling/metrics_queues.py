"""The queue families of /metrics as text, from the samples the cycle just wrote, re-rendered
only for the queues whose figures changed.

The prerendered body (schedweb.scheduling.metrics_body) is dominated by the queue families: a
dozen samples per queue and family, thousands of queues. Two things make them cheap:

- `KEPT`: the cycle's process keeps the rows of the samples it committed (as the database gives
  them back: the figures decoded from the JSON text written), so the render after the cycle reads
  no QueueSample row and decodes no JSON. Set on commit only (a rolled-back cycle keeps nothing);
  used only for the cycle the render finds newest, else the rows are read as before.
- `queue_text`: the families' text written directly (the bytes `metrics_text.exposition` writes
  for `metrics._queue_families`), each queue's lines kept with the row they were written from and
  written again only when that row differs (most queues' figures hold from one cycle to the next).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from prometheus_client.utils import floatToGoString

from schedweb.scheduling.metrics_text import escape_label_value

Row = tuple  # (queue, share, weight, overused, *metrics.QUEUE_FIGURES values)
CACHE_MAX = 100_000  # queues kept (a bound, not a working size: one entry per queue)


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


class QueueText:
    """Writes the queue families; keeps each queue's lines by family with the row they are of."""

    def __init__(self, figures: Sequence[str], metrics: Mapping[str, tuple[str, str | None, str]],
                 units: Sequence[tuple[str, str, str]], not_scalars: frozenset[str],
                 limit: str, set_: str, zero: str) -> None:
        self.figures, self.metrics, self.units, self.not_scalars = figures, metrics, units, not_scalars
        self.limit, self.set, self.zero = limit, set_, zero
        self.lines: dict[str, tuple[Row, dict[str, str]]] = {}
        self.written = 0  # queues written (not reused) since the start: tests and the benchmark

    def _queue_lines(self, row: Row) -> dict[str, str]:
        """One queue's lines of each sample family (as metrics._queue_families adds them)."""
        queue = row[0]
        label = f'{{queue_name="{escape_label_value(queue)}"}}'
        out: dict[str, list[str]] = {}

        def add(family: str, text: str) -> None:
            out.setdefault(family, []).append(text)

        add("volcano_queue_share", f"volcano_queue_share{label} {floatToGoString(row[1])}\n")
        add("volcano_queue_weight", f"volcano_queue_weight{label} {floatToGoString(row[2])}\n")
        add("volcano_queue_overused", f"volcano_queue_overused{label} {1.0 if row[3] else 0.0}\n")
        values = dict(zip(self.figures, row[4:], strict=True))
        for figure, (stem, old, reading) in self.metrics.items():
            value = values.get(figure)
            if value is None:
                continue
            for unit, key, _ in self.units:
                amount = float(value.get(key, 0))
                if reading == self.zero or (key in value and (reading == self.set or amount > 0)):
                    text = floatToGoString(amount)
                    for name in (stem, old) if old else (stem,):
                        add(f"{name}_{unit}", f"{name}_{unit}{label} {text}\n")
            family = f"{stem}_scalar_resources"
            for resource in sorted(set(value) - self.not_scalars):
                if reading != self.limit or value[resource] > 0:
                    add(family, f'{family}{{queue_name="{escape_label_value(queue)}",'
                                f'resource="{escape_label_value(resource)}"}} '
                                f"{floatToGoString(float(value[resource]))}\n")
        return {family: "".join(parts) for family, parts in out.items()}

    def samples_text(self, rows: Sequence[Row]) -> dict[str, str]:
        """Family name -> its sample lines for these rows, in the rows' order."""
        if len(self.lines) > CACHE_MAX:
            self.lines.clear()
        parts: dict[str, list[str]] = {}
        for row in rows:
            kept = self.lines.get(row[0])
            if kept is None or kept[0] != row:
                kept = self.lines[row[0]] = (row, self._queue_lines(row))
                self.written += 1
            for family, text in kept[1].items():
                parts.setdefault(family, []).append(text)
        return {family: "".join(texts) for family, texts in parts.items()}
