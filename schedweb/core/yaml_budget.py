"""YAML read within a budget: nesting depth and node count with aliases expanded.

PyYAML composes recursively (3,000 nested maps are a RecursionError) and lets aliases share
nodes (a 1.3 KB alias bomb stands for 10^9 nodes, which whatever walks the result then expands).
`BudgetLoader` refuses both while composing, in time and memory proportional to the text.
Settings: MAX_YAML_DEPTH (64), MAX_YAML_NODES (1,000,000).
"""

from __future__ import annotations

from typing import Any

import yaml
from django.conf import settings

from schedweb.core.validation import fail


class YamlBudgetError(yaml.YAMLError):
    """The YAML text is nested too deep or expands (aliases included) to too many nodes."""


class BudgetLoader(yaml.SafeLoader):
    """PyYAML's safe loader with a depth and expanded-size budget checked while composing.

    Aliases reuse the node they name, so a 1 KB file can stand for 10^9 nodes: each node's size
    counts its aliased children in full (memoised per node), and the document's running total is
    held to MAX_YAML_NODES. Timestamps stay strings, as Kubernetes' YAML-to-JSON reading keeps them.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.max_depth = int(getattr(settings, "MAX_YAML_DEPTH", 64))
        self.max_nodes = int(getattr(settings, "MAX_YAML_NODES", 1_000_000))
        self._depth = 0
        self._sizes: dict[int, int] = {}
        self._total = 0

    def compose_document(self):
        """One document, its budget counted from zero."""
        self._sizes, self._total = {}, 0
        return super().compose_document()

    def compose_node(self, parent, index):
        """Compose one node within the depth budget; count its expanded size."""
        if self._depth >= self.max_depth:
            mark = self.peek_event().start_mark
            raise YamlBudgetError(f"nested deeper than {self.max_depth} levels (MAX_YAML_DEPTH) at line "
                                  f"{mark.line + 1}")
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = self._sizes.get(id(node))
        if size is None:
            size = 1
            if isinstance(node, yaml.SequenceNode):
                size += sum(self._sizes.get(id(child), 1) for child in node.value)
            elif isinstance(node, yaml.MappingNode):
                size += sum(self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value)
            self._sizes[id(node)] = size
            self._total += 1
        if size > self.max_nodes or self._total > self.max_nodes:
            raise YamlBudgetError(f"more than {self.max_nodes} nodes once aliases are expanded "
                                  "(MAX_YAML_NODES)")
        return node


BudgetLoader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def check_yaml_budget(text: str, field: str) -> None:
    """Compose every document of `text` within the budget; ValidationError on `field` if it is
    over (syntax errors are left to the reader that parses it)."""
    try:
        for _ in yaml.compose_all(text, Loader=BudgetLoader):  # noqa: S506 - safe loader subclass
            pass
    except YamlBudgetError as exc:
        raise fail(field, f"YAML too large: {exc}") from None
    except yaml.YAMLError:
        return


def load_all(text: str) -> list[Any]:
    """Every document of `text`, read with BudgetLoader (YamlBudgetError when over budget)."""
    return list(yaml.load_all(text, Loader=BudgetLoader))  # noqa: S506 - safe loader subclass
