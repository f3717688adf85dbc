"""The base of scheduler_core.shapes: ShapeError and paths, free-text and nesting checks, and
durations (bounds documented in scheduler_core.shapes; these names are re-exported there)."""

from __future__ import annotations

import math
import re
from typing import Any

MAX_DEPTH = 32
MAX_TEXT = 65536
MAX_INT64 = 2**63 - 1
MAX_DURATION_SECONDS = 366 * 86400.0

# C0 controls except tab/newline/carriage return (multi-line text), DEL and C1 controls, and any
# surrogate code point: in a Python str decoded from JSON or UTF-8 a surrogate is always unpaired.
_BAD_MULTILINE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_BAD_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class ShapeError(ValueError):
    """A value that does not have its Kubernetes shape; `path` names the element."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


def join(path: str, key: str | int) -> str:
    """`join("a", "b")` = `a.b`, `join("a", 0)` = `a[0]`, `join("", "b")` = `b`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    """A JSON-ish name of `value`'s type for messages (`mapping`, `list`, `integer`, ...)."""
    for cls, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                      (dict, "mapping"), (list, "list")):
        if isinstance(value, cls):
            return name
    return "null" if value is None else type(value).__name__


# -- text ----------------------------------------------------------------------------------------

def _char_problem(char: str) -> str:
    code = ord(char)
    if code == 0:
        return "null characters are not allowed"
    if 0xD800 <= code <= 0xDFFF:
        return f"unpaired surrogate U+{code:04X} is not allowed"
    return f"control character U+{code:04X} is not allowed"


def check_text(value: Any, path: str, *, multiline: bool = False, max_length: int = MAX_TEXT) -> str:
    """A string without NUL, control characters (tab/newline/CR only if `multiline`) or unpaired
    surrogates, at most `max_length` characters."""
    if not isinstance(value, str):
        raise ShapeError(path, f"expected a string, got {type_name(value)}")
    if len(value) > max_length:
        raise ShapeError(path, f"longer than {max_length} characters")
    bad = (_BAD_MULTILINE if multiline else _BAD_LINE).search(value)
    if bad is not None:
        raise ShapeError(path, _char_problem(bad.group()))
    return value


def check_json_text(value: Any, path: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """Every key and string of a JSON value passes `check_text` (multi-line allowed in values),
    and it nests at most `max_depth` levels. Iterative: depth costs no recursion."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            check_text(item, where, multiline=True)
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                raise ShapeError(where, f"nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, sub in item.items():
                    if isinstance(key, str):
                        check_text(key, where)
                    stack.append((sub, join(where, str(key)), depth + 1))
            else:
                stack.extend((sub, join(where, i), depth + 1) for i, sub in enumerate(item))
    return value


def check_depth(value: Any, path: str, max_depth: int = MAX_DEPTH) -> Any:
    """`value` nests at most `max_depth` mappings/lists (iterative, so any depth is safe)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise ShapeError(where, f"nested deeper than {max_depth} levels")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((sub, join(where, k if isinstance(k, int) else str(k)), depth + 1)
                         for k, sub in pairs)
    return value


def check_duration(value: Any, path: str, *, maximum: float = MAX_DURATION_SECONDS) -> float | None:
    """Seconds: finite, non-negative, at most `maximum` (366 days); None stays None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ShapeError(path, f"expected a number of seconds, got {type_name(value)}")
    seconds = float(value) if not isinstance(value, int) or abs(value) <= 2**53 else math.inf
    if not math.isfinite(seconds) or seconds < 0 or seconds > maximum:
        raise ShapeError(path, f"must be between 0 and {maximum:g} seconds (366 days), got {value!r}")
    return seconds
