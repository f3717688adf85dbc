"""Strict list queries: a parameter whose value names nothing answers 400 naming the parameter.

One mechanism for every list endpoint, none per view:
- filter values are the filtersets' (schedweb.api.filtersets), validated by django-filter's
  backend before any row is read (its 400 names the parameter): enumerations are choice
  filters (`phase`, `state`, `reason_code`, ...), references to objects are `ExistingFilter`s
  (`queue=nope` is "Unknown queue 'nope'", not an empty page), booleans `StrictBooleanFilter`s;
- `ordering` and the paging parameters are checked by the pagination class every paginated
  list shares (schedweb.api.pagination.ApiPagination calls `check_ordering`): an ordering the
  view does not offer is a 400 listing the ones it does.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from rest_framework import serializers
from rest_framework.filters import OrderingFilter

from scheduler_core.reasons import ReasonCode

REASON_CODES = tuple(code.value for code in ReasonCode)
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


class ExistingField(forms.CharField):
    """A name (or id) that must name an existing row of `model` (looked up by `lookup`)."""

    def __init__(self, *args: Any, model: Any = None, lookup: str = "name", label_text: str = "",
                 also: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.model, self.lookup, self.label_text, self.also = model, lookup, label_text, also

    def clean(self, value: Any) -> Any:
        """The value when it names something (or is one of `also`), else a field error."""
        value = super().clean(value)
        if value in (None, "") or value in self.also:
            return value
        if self.lookup in ("id", "pk") and not str(value).isdigit():
            raise forms.ValidationError(f"Expected a {self.label_text} id, not {value!r}.")
        if not self.model.objects.filter(**{self.lookup: value}).exists():
            raise forms.ValidationError(f"Unknown {self.label_text} {value!r}.")
        return value


class ExistingFilter(django_filters.CharFilter):
    """A CharFilter whose value must name an existing object: `ExistingFilter(Queue, field_name=
    "queue__name", label_text="queue")`; `also` lists values that stand for something else
    (`root`)."""

    field_class = ExistingField

    def __init__(self, model: Any, *args: Any, lookup: str = "name", label_text: str = "",
                 also: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, model=model, lookup=lookup, label_text=label_text or model._meta.verbose_name,
                         also=also, **kwargs)


class StrictBooleanField(forms.Field):
    """true/false (1/0, yes/no, on/off); anything else is an error, not "no filter"."""

    def to_python(self, value: Any) -> bool | None:
        """The boolean, None when absent."""
        if value in (None, ""):
            return None
        text = str(value).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise forms.ValidationError(f"Expected true or false, not {value!r}.")


class StrictBooleanFilter(django_filters.BooleanFilter):
    """BooleanFilter refusing values other than true/false (django-filter ignores them)."""

    field_class = StrictBooleanField


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
