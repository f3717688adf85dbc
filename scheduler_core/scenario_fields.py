"""Typed, line-aware field readers for scenario files.

Every problem raises `ScenarioError(filename, line, message)`; the message starts with the key
path (`jobs[0].tasks[1].request.cpu: ...`) so it is useful even when the line is unknown (JSON).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime
from enum import Enum
from typing import Any, TypeVar

from scheduler_core import shapes
from scheduler_core.resources import QuantityError, Resource, check_stored, parse_quantity
from scheduler_core.yaml_lines import line_of

E = TypeVar("E", bound=Enum)
Path = tuple[str | int, ...]
MISSING: Any = object()
# Creation time of jobs that give none (and, plus one hour, the default `now`).
DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


class ScenarioError(ValueError):
    """A problem in a scenario file; `str()` is `FILE:LINE: message` (or `FILE: message`)."""

    def __init__(self, filename: str, line: int | None, message: str) -> None:
        self.filename = filename
        self.line = line
        self.message = message
        where = f"{filename}:{line}" if line is not None else filename
        super().__init__(f"{where}: {message}")


def path_text(path: Sequence[str | int]) -> str:
    """`("jobs", 0, "tasks")` -> `jobs[0].tasks`."""
    out = ""
    for step in path:
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            out += ("." if out else "") + str(step)
    return out


class Ctx:
    """Where errors point: the file name and a resolver from key paths to lines."""

    def __init__(self, filename: str, line_root: Callable[[], Any]) -> None:
        self.filename = filename
        self._line_root = line_root  # lazily built for JSON input (only needed on error)
        # Generated clusters repeat the same few requests thousands of times: parse each once.
        self.resource_cache: dict[tuple, Resource] = {}

    def line(self, path: Sequence[str | int]) -> int | None:
        """Line of a key path, or None when the input carries no line information."""
        return line_of(self._line_root(), path)

    def error(self, path: Sequence[str | int], message: str, *, line_path: Sequence[str | int] | None = None
              ) -> ScenarioError:
        """Build the error for `path` (`line_path` picks another element for the line)."""
        prefix = path_text(path)
        text = f"{prefix}: {message}" if prefix else message
        return ScenarioError(self.filename, self.line(path if line_path is None else line_path), text)

    def shape(self, check: Callable[[Any, str], Any], value: Any, path: Path) -> Any:
        """Run a scheduler_core.shapes check on the value at `path`; its ShapeError becomes a
        ScenarioError on the element it names (line of the deepest element found)."""
        try:
            return check(value, path_text(path))
        except shapes.ShapeError as exc:
            steps = tuple(int(i) if i else k for k, i in _PATH_STEP.findall(exc.path))
            where = steps if steps[: len(path)] == tuple(path) else tuple(path)
            raise ScenarioError(self.filename, self.line(where), str(exc)) from None


# A path as shapes writes it: `a.b[0].c` -> ("a", "b", 0, "c"); keys holding dots split too, which
# only makes the line lookup stop at the deepest element it finds.
_PATH_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    for cls, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                      (dict, "mapping"), (list, "list")):
        if isinstance(value, cls):
            return name
    return type(value).__name__


def label_text(value: Any) -> str | None:
    """Kubernetes label/taint values are strings; YAML scalars like `true` or `1` are converted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return None


_DURATION_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Go-style duration (`1h`, `30m`, `90s`, `1h30m`, `500ms`) to seconds; ValueError if malformed."""
    text = text.strip()
    pos, total = 0, 0.0
    while pos < len(text):
        m = _DURATION_RE.match(text, pos)
        if m is None:
            raise ValueError(text)
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not text:
        raise ValueError(text)
    return total


def parse_time(value: Any) -> float:
    """ISO-8601 text or YAML timestamp (naive = UTC) or unix seconds, to unix seconds."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        dt = datetime.fromisoformat(value.strip())
    else:
        raise ValueError(value)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def quantity_value(value: Any) -> float:
    """Parse one quantity (string or number); ValueError naming the text, negatives rejected."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a quantity, got {_type_name(value)}")
    parsed = parse_quantity(value if isinstance(value, str) else repr(value))
    if parsed < 0:
        raise ValueError(f"negative quantity {value!r}")
    return parsed


def parse_quantities(ctx: Ctx, path: Path, mapping: dict) -> dict[str, float]:
    """Parse every quantity of a mapping (output units: cores, bytes, own units), naming the bad one.

    Names are Kubernetes qualified names; amounts are finite and at most 2^63-1 stored units."""
    out: dict[str, float] = {}
    for name, q in mapping.items():
        if not isinstance(name, str):
            raise ctx.error(path, f"resource names are strings, got {_type_name(name)} {name!r}")
        ctx.shape(shapes.check_resource_name, name, (*path, name))
        try:
            out[name] = quantity_value(q)
        except ValueError as exc:
            text = str(exc) if str(exc).startswith(("expected", "negative")) else f"malformed quantity {q!r}"
            raise ctx.error((*path, name), text) from None
        try:
            check_stored(name, q)
        except QuantityError as exc:
            raise ctx.error((*path, name), str(exc).split(": ", 1)[-1]) from None
    return out


class Obj:
    """A mapping being read: unknown keys are errors; getters check types and report lines."""

    def __init__(self, ctx: Ctx, value: Any, path: Path, allowed: Sequence[str], *,
                 required: Sequence[str] = ()) -> None:
        if not isinstance(value, dict):
            raise ctx.error(path, f"expected a mapping, got {_type_name(value)}")
        self.ctx, self.data, self.path = ctx, value, path
        for key in value:
            if key not in allowed:
                raise ctx.error((*path, key), f"unknown key {key!r} (allowed: {', '.join(allowed)})")
        for key in required:
            if value.get(key) is None:
                raise ctx.error(path, f"missing required key {key!r}")

    def has(self, key: str) -> bool:
        """Key present with a non-null value."""
        return self.data.get(key) is not None

    def err(self, key: str | int, message: str) -> ScenarioError:
        """An error about one key of this mapping."""
        return self.ctx.error((*self.path, key), message)

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as loaded (None when absent)."""
        value = self.data.get(key)
        return default if value is None else value

    def text(self, key: str, default: Any = MISSING) -> Any:
        """A non-empty string."""
        value = self.data.get(key)
        if value is None:
            return None if default is MISSING else default
        if not isinstance(value, str) or not value:
            raise self.err(key, f"expected a non-empty string, got {_type_name(value)}")
        return value

    def integer(self, key: str, default: int, *, minimum: int | None = None) -> int:
        """An integer (booleans rejected), optionally bounded below."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.err(key, f"expected an integer, got {_type_name(value)} {value!r}")
        if minimum is not None and value < minimum:
            raise self.err(key, f"must be >= {minimum}, got {value}")
        return value

    def number(self, key: str, default: float | None = None) -> float | None:
        """An int or float (booleans rejected)."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.err(key, f"expected a number, got {_type_name(value)} {value!r}")
        if not math.isfinite(float(value)):
            raise self.err(key, f"expected a finite number, got {value!r}")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        """true or false."""
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.err(key, f"expected true or false, got {_type_name(value)} {value!r}")
        return value

    def enum(self, key: str, cls: type[E], default: E) -> E:
        """One of the enum's values, spelled exactly."""
        value = self.data.get(key)
        if value is None:
            return default
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in cls)
            raise self.err(key, f"invalid value {value!r} (expected one of: {allowed})") from None

    def choice(self, key: str, allowed: Sequence[str], default: str | None) -> str | None:
        """One of a fixed set of strings."""
        value = self.data.get(key)
        if value is None:
            return default
        if value not in allowed:
            raise self.err(key, f"invalid value {value!r} (expected one of: {', '.join(allowed)})")
        return value

    def mapping(self, key: str) -> dict | None:
        """A free-form mapping (or None)."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.err(key, f"expected a mapping, got {_type_name(value)}")
        return value

    def items(self, key: str) -> Iterator[tuple[Path, Any]]:
        """(path, item) for each element of a list (absent = none)."""
        value = self.data.get(key)
        if value is None:
            return iter(())
        if not isinstance(value, list):
            raise self.err(key, f"expected a list, got {_type_name(value)}")
        return (((*self.path, key, i), item) for i, item in enumerate(value))

    def labels(self, key: str) -> dict[str, str]:
        """A string -> string mapping (scalar values converted to text)."""
        value = self.mapping(key) or {}
        out: dict[str, str] = {}
        for k, v in value.items():
            text = label_text(v)
            if not isinstance(k, str) or text is None:
                raise self.ctx.error((*self.path, key, k), f"expected a string value, got {_type_name(v)}")
            out[k] = text
        return out

    def quantities(self, key: str) -> dict[str, float] | None:
        """A quantity mapping parsed per key (canonical output units), or None when absent."""
        value = self.mapping(key)
        return None if value is None else parse_quantities(self.ctx, (*self.path, key), value)

    def resource(self, key: str) -> Resource | None:
        """A Resource from a quantity mapping (`pods` sets the task count), or None when absent."""
        value = self.mapping(key)
        if value is None:
            return None
        try:
            cache_key: tuple | None = tuple((k, type(v), v) for k, v in value.items())
            cached = self.ctx.resource_cache.get(cache_key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable value: let parse_quantities name it
            cache_key, cached = None, None
        if cached is not None:
            return cached.clone()
        parse_quantities(self.ctx, (*self.path, key), value)
        resource = Resource.from_quantities(dict(value))
        if cache_key is not None:
            self.ctx.resource_cache[cache_key] = resource.clone()
        return resource

    def time(self, key: str) -> float | None:
        """An ISO-8601 timestamp (or unix seconds) as unix seconds."""
        value = self.data.get(key)
        if value is None:
            return None
        try:
            return parse_time(value)
        except (ValueError, TypeError):
            raise self.err(key, f"invalid timestamp {value!r} (expected ISO-8601 like "
                                "2026-01-01T00:00:00Z)") from None

    def duration(self, key: str) -> float | None:
        """A Go-style duration (`1h`, `30m`, `90s`) or a number of seconds; finite, at most
        shapes.MAX_DURATION_SECONDS (366 days)."""
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            seconds = value
        else:
            try:
                if not isinstance(value, str):
                    raise ValueError(value)
                seconds = parse_duration(value)
            except ValueError:
                raise self.err(key, f"invalid duration {value!r} (expected e.g. 1h, 30m, 90s)") from None
        return self.ctx.shape(shapes.check_duration, seconds, (*self.path, key))
