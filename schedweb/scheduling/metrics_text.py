"""The Prometheus text format of /metrics, written directly: the same bytes as prometheus_client's
`generate_latest` for the families SchedulerCollector yields, at a fraction of its cost.

`generate_latest` re-validates every label name of every sample with a regular expression (most
of a scrape's CPU: the plugin histograms alone are hundreds of samples); ours are fixed
identifiers, checked once per family name instead. Label values and HELP texts are escaped as
the format requires (backslash, newline, and double quotes in label values). One difference: a
counter upstream names without `_total` (metrics_latency.ExactCounterFamily) is written under
exactly that name, as Go's client does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from prometheus_client.core import Metric
from prometheus_client.utils import floatToGoString

from schedweb.scheduling.metrics_latency import ExactCounterFamily

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
TYPES = {"counter": "counter", "gauge": "gauge", "histogram": "histogram", "unknown": "untyped"}


@lru_cache(maxsize=4096)
def _checked(name: str) -> str:
    if not NAME.match(name):
        raise ValueError(f"not a Prometheus name: {name!r}")
    return name


def escape_label_value(text: str) -> str:
    """A label value escaped as the text format requires."""
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")



def exposition(families: Iterable[Metric]) -> bytes:
    """The text format (version 0.0.4) of these gauge, counter and histogram families."""
    out: list[str] = []
    for family in families:
        exact = isinstance(family, ExactCounterFamily)
        name = family.name + "_total" if family.type == "counter" and not exact else family.name
        help_text = family.documentation.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {_checked(name)} {help_text}\n# TYPE {name} {TYPES[family.type]}\n")
        if (text := getattr(family, "sample_text", None)) is not None:  # metrics_jobs.JobGaugeFamily
            for label in getattr(family, "label_names", ()):
                _checked(label)
            out.append(text())
            continue
        for sample in family.samples:
            if sample.labels:
                labels = ",".join(f'{_checked(k)}="{escape_label_value(v)}"'
                                  for k, v in sorted(sample.labels.items()))
                out.append(f"{_checked(sample.name)}{{{labels}}} {floatToGoString(sample.value)}\n")
            else:
                out.append(f"{_checked(sample.name)} {floatToGoString(sample.value)}\n")
    return "".join(out).encode("utf-8")
