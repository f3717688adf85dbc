"""YAML loading that remembers line numbers, so scenario errors can say `FILE:LINE:`.

`load_yaml_lines(text)` returns plain Python values where every mapping is a `LineMap` (a dict
that knows its own line and the line of each key) and every sequence a `LineList` (a list that
knows the line of each item). Duplicate keys are errors here (PyYAML silently keeps the last).
`line_of(root, path)` finds the line of a key path such as `("jobs", 0, "tasks", 1, "request")`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

try:  # libyaml composes much faster; fall back to the pure-Python loader when absent
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader


class LineMap(dict):
    """A dict with `line` (1-based, where the mapping starts) and `key_lines` (key -> line)."""

    line: int | None = None
    key_lines: dict[Any, int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key_lines = {}


class LineList(list):
    """A list with `line` (1-based, where the sequence starts) and `item_lines` (per item)."""

    line: int | None = None
    item_lines: list[int]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.item_lines = []


class YamlLineError(ValueError):
    """A YAML syntax error or a duplicate key, with the 1-based line where it was found."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader whose mappings and sequences carry line numbers."""


def _construct_map(loader: _LineLoader, node: yaml.MappingNode) -> LineMap:
    # Keys written in this mapping; keys merged in through `<<` may be overridden by them.
    explicit = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
    loader.flatten_mapping(node)  # resolves `<<` merge keys like SafeLoader does
    out = LineMap()
    out.line = node.start_mark.line + 1
    written: set[Any] = set()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            raise YamlLineError(line, "mapping key must be a scalar") from None
        if id(key_node) in explicit:
            if key in written:
                raise YamlLineError(line, f"duplicate key {key!r} (first on line {out.key_lines[key]})")
            written.add(key)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = line
    return out


def _construct_seq(loader: _LineLoader, node: yaml.SequenceNode) -> LineList:
    out = LineList()
    out.line = node.start_mark.line + 1
    for item in node.value:
        out.append(loader.construct_object(item, deep=True))
        out.item_lines.append(item.start_mark.line + 1)
    return out


_LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def load_yaml_lines(text: str) -> Any:
    """Parse one YAML document into LineMap/LineList/scalars; raise YamlLineError on bad input."""
    loader = _LineLoader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        what = exc.problem or exc.context or "invalid YAML"
        raise YamlLineError(line, f"YAML syntax error: {what}") from None
    except yaml.YAMLError as exc:
        raise YamlLineError(None, f"YAML error: {exc}") from None
    finally:
        loader.dispose()


def line_of(root: Any, path: Sequence[str | int]) -> int | None:
    """Line of the deepest element of `path` that has a known line (None without line info)."""
    line = getattr(root, "line", None)
    node = root
    for step in path:
        if isinstance(node, LineMap) and step in node:
            line = node.key_lines.get(step, line)
            node = node[step]
        elif isinstance(node, LineList) and isinstance(step, int) and 0 <= step < len(node):
            line = node.item_lines[step]
            node = node[step]
        else:
            break
    return line
