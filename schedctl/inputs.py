"""`job submit -f FILE`: tell a Volcano YAML manifest from a JSON job body, and find error lines.

Syntax errors are reported here as `FILE:LINE: message` (exit 2); everything else is the
server's to judge, and the field paths of its 400 answers are mapped back to lines of FILE.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from schedctl.errors import InputError

_STEP = re.compile(r"\[(\d+)\]|\.?([^.\[]+)")


@dataclass
class Submission:
    """What the file holds: manifest text for the import endpoint, or one job body for /jobs/."""

    name: str
    kind: str  # "manifest" or "job"
    text: str
    job: dict[str, Any] | None = None
    # Root node of each non-empty YAML document (the server's documents[i]), or of the JSON body.
    nodes: list[yaml.Node] = field(default_factory=list)

    def locate(self, path: str) -> str | None:
        """`FILE:LINE` of the field an API error path names (`documents[1].spec.weight`,
        `tasks[0].request`), or of its nearest enclosing node; None when the path says nothing."""
        steps = _steps(path)
        if self.kind == "manifest":
            if not steps or steps[0] != "documents" or len(steps) < 2 or not isinstance(steps[1], int):
                return None
            if steps[1] >= len(self.nodes):
                return None
            node, rest = self.nodes[steps[1]], steps[2:]
        else:
            if not self.nodes:
                return None
            node, rest = self.nodes[0], steps
        line, used = _walk(node, rest)
        # The server names some manifest fields by its own field names (`documents[0].weight` of a
        # Queue): a first step the document lacks is looked for under spec, then metadata.
        for section in (("spec",), ("metadata",)) if self.kind == "manifest" and rest and not used else ():
            nested, deeper = _walk(node, [*section, *rest])
            if deeper > len(section):
                line = nested
                break
        return f"{self.name}:{line + 1}"


def read_submission(path: str) -> Submission:
    """Read FILE (`-` = stdin) and decide what it is.

    A `.json` file, or text that parses as JSON, holding one object without `kind` is a job body
    for POST /api/v1/jobs/; anything else is YAML manifests (JSON manifests are YAML too).
    """
    name = "<stdin>" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(name, 1, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(name, _line_of(data, exc.start), "not UTF-8 text") from None
    if not text.strip():
        raise InputError(name, 1, "the file is empty")
    parsed_json = _json_or_none(name, text, strict=path.endswith(".json"))
    if isinstance(parsed_json, dict) and "kind" not in parsed_json and "apiVersion" not in parsed_json:
        return Submission(name, "job", text, job=parsed_json, nodes=_json_nodes(text))
    if isinstance(parsed_json, list):
        raise InputError(name, 1, "a JSON file holds one job body (an object); put several jobs in a "
                                  "YAML manifest file, one document each")
    return Submission(name, "manifest", text, nodes=_nodes(name, text))


def _json_or_none(name: str, text: str, *, strict: bool) -> Any:
    """The parsed JSON, or None when the text is not JSON (an error for a `.json` file)."""
    if not strict and text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if strict:
            raise InputError(name, exc.lineno, f"not valid JSON: {exc.msg} (column {exc.colno})") from None
        return None  # e.g. a YAML flow mapping: YAML decides


def _nodes(name: str, text: str) -> list[yaml.Node]:
    """Root nodes of the non-empty documents (the server skips empty ones, so indices agree)."""
    try:
        nodes = [n for n in yaml.compose_all(text) if not _is_null(n)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(name, mark.line + 1 if mark else 1, f"not valid YAML: {problem}") from None
    if not nodes:
        raise InputError(name, 1, "no YAML documents in the file")
    for i, node in enumerate(nodes):
        if not isinstance(node, yaml.MappingNode):
            raise InputError(name, node.start_mark.line + 1,
                             f"document {i + 1}: expected a manifest (a mapping with apiVersion and kind)")
    return nodes


def _json_nodes(text: str) -> list[yaml.Node]:
    """The JSON body as a YAML node (for error lines); JSON that YAML 1.1 cannot read just has none."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return []
    return [node] if node is not None else []


def _is_null(node: yaml.Node | None) -> bool:
    return node is None or (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"))


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def _steps(path: str) -> list[str | int]:
    """`documents[1].spec.tasks[0].name` -> ["documents", 1, "spec", "tasks", 0, "name"]."""
    return [int(m.group(1)) if m.group(1) is not None else m.group(2) for m in _STEP.finditer(path)]


def _walk(node: yaml.Node, steps: list[str | int]) -> tuple[int, int]:
    """(0-based line of the deepest node the steps reach, how many steps were used). Map keys may
    hold dots (`volcano.sh/preemptable`), so a key matches the longest run of steps that spells it."""
    line = node.start_mark.line
    i = 0
    while i < len(steps):
        step = steps[i]
        if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node, i = node.value[step], i + 1
            line = node.start_mark.line
            continue
        if not isinstance(node, yaml.MappingNode):
            break
        match = None
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            for j in range(len(steps), i, -1):
                if all(isinstance(s, str) for s in steps[i:j]) and key == ".".join(steps[i:j]):
                    if match is None or j > match[0]:
                        match = (j, key_node, value_node)
                    break
        if match is None:
            break
        i, key_node, node = match
        line = key_node.start_mark.line
    return line, i
