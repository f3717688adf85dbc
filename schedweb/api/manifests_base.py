"""What every manifest reader shares: API versions, annotations, ManifestError and its helpers,
Go durations, and the budgeted YAML reader (schedweb.core.yaml_budget.BudgetLoader)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from schedweb.core.yaml_budget import BudgetLoader, YamlBudgetError

QUEUE_API = "scheduling.volcano.sh/v1beta1"
PODGROUP_API = "scheduling.volcano.sh/v1beta1"
JOB_API = "batch.volcano.sh/v1alpha1"
PRIORITY_CLASS_APIS = ("scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1")
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
SLA_ANNOTATION = "sla-waiting-time"
DURATION_ANNOTATION = "schedweb.io/duration-seconds"
# On a batch Job task template: its pods' names, comma-separated, when they are not Volcano's
# `<job>-<task>-<index>` (a job submitted over JSON names its tasks freely).
TASK_NAMES_ANNOTATION = "schedweb.io/task-names"

METADATA_KEYS = {"name", "namespace", "annotations", "labels", "uid", "resourceVersion", "generation",
                 "creationTimestamp", "managedFields", "ownerReferences", "finalizers", "selfLink"}
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")


class ManifestError(ValidationError):
    """A bad document; `fields` keys are paths like `documents[2].spec.weight`."""


def fail(path: str, message: str) -> None:
    """Raise a ManifestError naming `path`."""
    raise ManifestError({path: [message]})


def obj(value: Any, path: str) -> dict:
    """A mapping (None is {}), else a ManifestError at `path`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(path, "Expected a mapping.")
    return value


def name_of(value: Any, path: str) -> str | None:
    """An optional name: a string or absent (it keys dict lookups, so nothing else passes)."""
    if value is not None and not isinstance(value, str):
        fail(path, "Expected a string.")
    return value


def check_keys(value: dict, allowed: set[str], path: str) -> None:
    """Refuse keys outside `allowed`, each named by its path."""
    unknown = sorted(set(value) - allowed, key=str)
    if unknown:
        raise ManifestError({f"{path}.{key}": ["Unknown or unsupported field."] for key in unknown})


def parse_duration(text: Any, path: str) -> float:
    """A Go duration ("1h30m", "90s") or a number of seconds, as seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    s = str(text).strip()
    try:
        return float(s)  # a bare number of seconds, as in our own duration annotation
    except ValueError:
        pass
    if s and _GO_DURATION.sub("", s) == "":
        scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
        return sum(float(n) * scale[u] for n, u in _GO_DURATION.findall(s))
    fail(path, f"Bad duration {text!r}: expected a Go duration such as '1h30m' or '90s'.")
    return 0.0  # unreachable


def format_duration(seconds: float) -> str:
    """Seconds as a Go duration string ("1h30m0s" style, or "90s")."""
    if not float(seconds).is_integer():
        return f"{seconds}s"
    total = int(seconds)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m or h else "") + f"{s}s"


def bool_annotation(annotations: dict, key: str, path: str) -> bool | None:
    """A "true"/"false" annotation as a bool (None when absent)."""
    if key not in annotations:
        return None
    value = str(annotations[key]).lower()
    if value not in ("true", "false"):
        fail(f"{path}.annotations.{key}", "Expected 'true' or 'false'.")
    return value == "true"


def load_documents(text: str) -> list[dict]:
    """The non-empty YAML documents of `text`; each must be a mapping with apiVersion and kind."""
    try:
        docs = [d for d in yaml.load_all(text, Loader=BudgetLoader) if d is not None]  # noqa: S506
    except YamlBudgetError as exc:
        raise ManifestError({"yaml": [f"YAML too large: {exc}"]}) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ManifestError({"yaml": [f"Not valid YAML{where}: {getattr(exc, 'problem', exc)}"]}) from exc
    if not docs:
        fail("yaml", "No documents found.")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            fail(f"documents[{i}]", "Expected a mapping with apiVersion and kind.")
        for key in ("apiVersion", "kind"):
            if not doc.get(key):
                fail(f"documents[{i}].{key}", "This field is required.")
            if not isinstance(doc[key], str):
                fail(f"documents[{i}].{key}", "Expected a string.")
    return docs


def check_json_values(doc: Any, path: str) -> None:
    """Only what JSON (and so Kubernetes) can hold: mappings with string keys, lists, strings,
    finite numbers, booleans and null. YAML also reads NaN, binary, sets and numeric keys, which
    a stored passthrough could not keep. Iterative: the budget already bounds the depth."""
    import math

    stack: list[tuple[Any, str]] = [(doc, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    fail(f"{where}.{key}", f"Keys must be strings, not {type(key).__name__}.")
                stack.append((sub, f"{where}.{key}"))
        elif isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            fail(where, "Expected a finite number.")
        elif item is not None and not isinstance(item, str | int | float | bool):
            fail(where, f"Expected a JSON value, not {type(item).__name__}.")


def metadata(doc: dict, path: str) -> dict:
    """A document's metadata (name required; name and namespace strings; maps where maps belong)."""
    meta = obj(doc.get("metadata"), f"{path}.metadata")
    check_keys(meta, METADATA_KEYS, f"{path}.metadata")
    if not meta.get("name"):
        fail(f"{path}.metadata.name", "This field is required.")
    # Names key dicts below (queues by name, pods by group): anything but a string is refused here.
    for key in ("name", "namespace"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            fail(f"{path}.metadata.{key}", "Expected a string.")
    for key in ("annotations", "labels"):
        obj(meta.get(key), f"{path}.metadata.{key}")
    return meta


def kept_metadata(meta: dict) -> dict:
    """The metadata an export gives back: labels and annotations as written (server-set keys such
    as uid and resourceVersion are not kept)."""
    return {key: meta[key] for key in ("labels", "annotations") if meta.get(key)}
