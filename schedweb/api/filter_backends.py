"""Strict list queries: a parameter whose value names nothing answers 400 naming the parameter.

One mechanism for every list endpoint, none per view:
- filter values are the filtersets' (schedweb.core.filtersets), validated by django-filter's
  backend before any row is read (its 400 names the parameter);
- `ordering` and the paging parameters are checked by the pagination class every paginated
  list shares (schedweb.api.pagination.ApiPagination calls `check_ordering`): an ordering the
  view does not offer is a 400 listing the ones it does.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.filters import OrderingFilter


def valid_orderings(queryset: Any, view: Any, request: Any) -> set[str] | None:
    """The `ordering` terms the view offers (None when it offers no OrderingFilter)."""
    for backend in getattr(view, "filter_backends", ()) or ():
        if isinstance(backend, type) and issubclass(backend, OrderingFilter):
            fields = backend().get_valid_fields(queryset, view, {"request": request})
            return {name for name, _ in fields}
    return None


def check_ordering(queryset: Any, request: Any, view: Any) -> None:
    """400 naming `ordering` when a term is not one the view orders by."""
    raw = request.query_params.get("ordering")
    if raw is None or raw.strip() == "" or view is None:
        return
    valid = valid_orderings(queryset, view, request) or set()
    bad = [term for term in (t.strip() for t in raw.split(",")) if term.lstrip("-") not in valid]
    if bad:
        offered = ", ".join(sorted(valid)) or "none"
        raise serializers.ValidationError({"ordering": [
            f"Unknown ordering {bad[0]!r}; this list orders by: {offered} (prefix '-' for descending)."]})
