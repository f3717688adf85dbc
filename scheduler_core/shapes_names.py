"""Object names as Kubernetes validates them (part of scheduler_core.shapes, re-exported there).

- Names of cluster objects (jobs/PodGroups, queues, nodes, priority classes): DNS-1123
  subdomains, at most `MAX_SUBDOMAIN` = 253 lower-case letters, digits, '-' and '.', each
  dot-separated part starting and ending with a letter or digit (`a..b`, `Upper_Case`, `Node_1`
  are refused, as `kubectl apply` refuses them). Nothing is normalised: "name\\n" or "Name" is an
  error, never quietly made "name".
- Names Kubernetes keeps as DNS-1123 labels (namespaces, a Volcano task's name inside its
  job): at most `MAX_LABEL` = 63 characters, no dots.
- Pod names (schedweb's task names): subdomains of at most `MAX_POD_NAME` = 63 characters, the
  bound Volcano's job webhook puts on the pods `<job>-<task>-<index>` it makes (`pod_name`).

Rows stored before these rules keep their names: they are checked where a name comes in, never
when one is read.
"""

from __future__ import annotations

import re
from typing import Any

from scheduler_core.shapes_base import MAX_TEXT, ShapeError, check_text, type_name

MAX_SUBDOMAIN = 253
MAX_LABEL = 63
MAX_POD_NAME = 63

LABEL_PATTERN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN_PATTERN = rf"{LABEL_PATTERN}(\.{LABEL_PATTERN})*"
_LABEL = re.compile(LABEL_PATTERN)
_SUBDOMAIN = re.compile(SUBDOMAIN_PATTERN)

SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain: lower-case letters, digits, '-' and '.', starting and "
                  "ending with a letter or digit (e.g. 'example.com')")
LABEL_RULE = ("a lowercase RFC 1123 label: lower-case letters, digits and '-', starting and ending with a "
              "letter or digit (e.g. 'my-name')")


def _name(value: Any, path: str, what: str) -> str:
    if not isinstance(value, str):
        raise ShapeError(path, f"expected a string, got {type_name(value)}")
    if not value:
        raise ShapeError(path, f"{what} is required (a non-empty name)")
    check_text(value, path, max_length=MAX_SUBDOMAIN + 1)  # control characters named as such
    return value


def _check(value: Any, path: str, what: str, max_length: int, pattern: Any, rule: str) -> str:
    _name(value, path, what)
    if len(value) > max_length:
        raise ShapeError(path, f"{what} {value!r} is {len(value)} characters; at most {max_length}")
    if not pattern.fullmatch(value):
        raise ShapeError(path, f"{what} {value!r} is not {rule}")
    return value


def check_subdomain_name(value: Any, path: str, what: str = "name", *,
                         max_length: int = MAX_SUBDOMAIN) -> str:
    """A Kubernetes object name: a DNS-1123 subdomain of at most `max_length` characters."""
    return _check(value, path, what, max_length, _SUBDOMAIN, SUBDOMAIN_RULE)


def check_label_name(value: Any, path: str, what: str = "name") -> str:
    """A name Kubernetes keeps as a DNS-1123 label (at most 63 characters, no dots)."""
    return _check(value, path, what, MAX_LABEL, _LABEL, LABEL_RULE)


def check_pod_name(value: Any, path: str, what: str = "task name") -> str:
    """A pod (task) name: a DNS-1123 subdomain of at most MAX_POD_NAME characters."""
    return check_subdomain_name(value, path, what, max_length=MAX_POD_NAME)


def pod_name(job: str, task: str, index: int) -> str:
    """The name Volcano gives a job's task's `index`-th pod: `<job>-<task>-<index>`."""
    return f"{job}-{task}-{index}"


# Label keys and values (the taint and selector checks use them too, shapes_taints).
MAX_PREFIX = 253
MAX_NAME = 63
MAX_LABEL_VALUE = 63
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def check_label_key(value: Any, path: str) -> str:
    """A Kubernetes qualified name: `[prefix/]name`, prefix a DNS subdomain."""
    if not isinstance(value, str):
        raise ShapeError(path, f"expected a string, got {type_name(value)}")
    check_text(value, path, max_length=MAX_PREFIX + 1 + MAX_NAME)
    prefix, slash, name = value.rpartition("/")
    bad_prefix = slash and (not prefix or len(prefix) > MAX_PREFIX or not _DNS_SUBDOMAIN.fullmatch(prefix))
    if bad_prefix or not name or len(name) > MAX_NAME or not _NAME.fullmatch(name):
        raise ShapeError(path, f"{value!r} is not a qualified name: an optional prefix (a DNS subdomain "
                               f"of at most {MAX_PREFIX} lower-case letters, digits, '-' and '.') and '/', "
                               f"then at most {MAX_NAME} letters, digits, '-', '_' or '.', starting and "
                               "ending with a letter or digit")
    return value


def check_label_value(value: Any, path: str) -> str:
    """A label value: empty, or at most 63 letters, digits, '-', '_', '.' (alphanumeric ends)."""
    if not isinstance(value, str):
        raise ShapeError(path, f"expected a string, got {type_name(value)}")
    check_text(value, path, max_length=MAX_TEXT)
    if value and (len(value) > MAX_LABEL_VALUE or not _NAME.fullmatch(value)):
        raise ShapeError(path, f"{value!r} is not a valid label value: at most {MAX_LABEL_VALUE} letters, "
                               "digits, '-', '_' or '.', starting and ending with a letter or digit")
    return value
