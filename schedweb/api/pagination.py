"""Keyset pagination with a `continue` token (as Kubernetes lists page), strict about its parameters.

A page is `?limit=N` rows in the list's ordering; its body carries `continue`, an opaque token
naming the page's last row by its ordering values (the primary key breaks ties), and `next`, the
same URL with that token. The next page is the rows *after* that row, read again from the
database: rows inserted or deleted meanwhile never shift it, so a client walking the pages sees
every row that existed when it started exactly once (offset pages drift: an insertion at the
head repeats the last row of the page before).

`?offset=` still works (the pages of older clients, `previous` links) but drifts as it always
did; `count` is the number of rows matching now. Bad parameters are a 400 naming them: a
`limit` that is not a whole number from 1 to MAX_LIMIT (the message names the maximum), an
`offset` that is not a whole number, a token that is not one of ours or was made for another
ordering, `continue` with `offset`, an `ordering` the list does not offer.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from decimal import Decimal
from typing import Any

from django.db.models import F, Q, QuerySet
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.utils.urls import remove_query_param, replace_query_param

from schedweb.api.filter_backends import check_ordering

CONTINUE = "continue"


def _error(name: str, message: str) -> serializers.ValidationError:
    return serializers.ValidationError({name: [message]})


def ordering_of(queryset: QuerySet) -> list[str]:
    """The queryset's ordering as `[-]field` terms, the primary key last (the tie-breaker)."""
    given = queryset.query.order_by or queryset.model._meta.ordering or ()
    terms = [t for t in given if isinstance(t, str)]
    pk = queryset.model._meta.pk.attname
    if not any(t.lstrip("-") in ("pk", pk) for t in terms):
        terms.append(pk)
    return [t.replace("pk", pk) if t.lstrip("-") == "pk" else t for t in terms]


def _value_of(row: Any, field: str) -> Any:
    for part in field.split("__"):
        row = getattr(row, part) if row is not None else None
    return row


def _encode_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return {"t": value.isoformat()}
    if isinstance(value, Decimal):
        return {"d": str(value)}
    return value


def _decode_value(value: Any) -> Any:
    if isinstance(value, dict) and "t" in value:
        text = value["t"]
        return dt.datetime.fromisoformat(text) if "T" in text else dt.date.fromisoformat(text)
    if isinstance(value, dict) and "d" in value:
        return Decimal(value["d"])
    return value


def encode_token(ordering: list[str], row: Any) -> str:
    """The token naming `row` in `ordering`."""
    raw = json.dumps({"o": ordering, "v": [_encode_value(_value_of(row, t.lstrip("-"))) for t in ordering]},
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str, ordering: list[str]) -> list[Any]:
    """The ordering values a token names (400 naming `continue` when it is not for `ordering`)."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        values = [_decode_value(v) for v in raw["v"]]
        same = raw["o"] == ordering and len(values) == len(ordering)
    except (ValueError, TypeError, KeyError, binascii.Error, UnicodeDecodeError):
        raise _error(CONTINUE, "Not a continue token of this list (send back the one a page gave).") from None
    if not same:
        raise _error(CONTINUE, "This continue token was made for another ordering; start again without it.")
    return values


def _nullable(model: Any, path: str) -> bool:
    """Whether the (possibly related, `a__b`) field can be NULL; True when it cannot be resolved."""
    try:
        for part in path.split("__")[:-1]:
            model = model._meta.get_field(part).related_model
        field = model._meta.get_field(path.split("__")[-1])
    except (AttributeError, LookupError, ValueError):
        return True
    return bool(getattr(field, "null", True))


def after(ordering: list[str], values: list[Any], model: Any = None) -> Q:
    """Rows strictly after the row with `values` in `ordering` (NULLs last ascending, first
    descending, as `ordered` sorts them; no NULL test on a column that cannot hold one)."""
    condition, equal = Q(pk__in=[]), Q()
    for term, value in zip(ordering, values, strict=True):
        field, descending = term.lstrip("-"), term.startswith("-")
        if value is None:
            beyond = Q(**{f"{field}__isnull": False}) if descending else Q(pk__in=[])
            same = Q(**{f"{field}__isnull": True})
        else:
            beyond = Q(**{f"{field}__lt" if descending else f"{field}__gt": value})
            if not descending and (model is None or _nullable(model, field)):
                beyond |= Q(**{f"{field}__isnull": True})
            same = Q(**{field: value})
        condition |= equal & beyond
        equal &= same
    return condition


def ordered(queryset: QuerySet, ordering: list[str]) -> QuerySet:
    """`queryset` in `ordering`, NULLs placed the same way on every database."""
    return queryset.order_by(*[F(t[1:]).desc(nulls_first=True) if t.startswith("-") else
                               F(t).asc(nulls_last=True) for t in ordering])


class ApiPagination(LimitOffsetPagination):
    """`?limit=&continue=` (or `?offset=`); default 50 rows, at most MAX_LIMIT (1000)."""

    default_limit = 50
    max_limit = 1000

    def _whole(self, request, name: str, minimum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None or raw.strip() == "":
            return None
        text = raw.strip()
        if not text.isdigit() or int(text) < minimum:
            raise _error(name, f"Expected a whole number of at least {minimum}, not {raw!r}.")
        return int(text)

    def get_limit(self, request) -> int:
        """The page size asked for, else the default; above max_limit is a 400 naming it."""
        value = self._whole(request, self.limit_query_param, 1)
        if value is not None and value > self.max_limit:
            raise _error(self.limit_query_param, f"At most {self.max_limit} rows per page (MAX_LIMIT), not "
                                                 f"{value}; follow `continue` for more.")
        return self.default_limit if value is None else value

    def get_offset(self, request) -> int:
        """Rows to skip (0 when absent)."""
        return self._whole(request, self.offset_query_param, 0) or 0

    def paginate_queryset(self, queryset, request, view=None):
        """Check `ordering` against what the view offers, then one page (keyset unless `offset`)."""
        check_ordering(queryset, request, view)
        self.request, self._keyset = request, False
        self.ordering = ordering_of(queryset)
        queryset = ordered(queryset, self.ordering)
        token = request.query_params.get(CONTINUE) or None
        if token is not None and request.query_params.get(self.offset_query_param):
            raise _error(CONTINUE, "Give continue or offset, not both.")
        if token is None and self.get_offset(request):
            page = super().paginate_queryset(queryset, request, view)
            self._last = page[-1] if page and self.offset + self.limit < self.count else None
            return page
        self.limit, self.offset = self.get_limit(request), 0
        self.count = self.get_count(queryset)
        rows = queryset
        if token is not None:
            rows = rows.filter(after(self.ordering, decode_token(token, self.ordering), queryset.model))
        page = list(rows[:self.limit + 1])
        self._last = page[self.limit - 1] if len(page) > self.limit else None
        self._keyset = True
        return page[:self.limit]

    def continue_token(self) -> str | None:
        """The token of the page after this one (None on the last page)."""
        return None if self._last is None else encode_token(self.ordering, self._last)

    def get_next_link(self) -> str | None:
        """This URL with the next page's `continue` (and no offset)."""
        token = self.continue_token()
        if token is None:
            return None
        url = remove_query_param(self.request.build_absolute_uri(), self.offset_query_param)
        return replace_query_param(url, CONTINUE, token)

    def get_previous_link(self) -> str | None:
        """Offset pages only: a keyset page has no way back (start again without `continue`)."""
        return None if getattr(self, "_keyset", False) else super().get_previous_link()

    def get_paginated_response(self, data):
        """{count, next, previous, continue, results}: the limit/offset body plus the token."""
        from rest_framework.response import Response

        return Response({"count": self.count, "next": self.get_next_link(),
                         "previous": self.get_previous_link(), CONTINUE: self.continue_token(),
                         "results": data})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        """The body's schema: DRF's page plus `continue`."""
        out = super().get_paginated_response_schema(schema)
        out["properties"][CONTINUE] = {"type": "string", "nullable": True, "description": (
            "Token of the next page (send it as ?continue=); null on the last page.")}
        out["required"] = ["count", "results"]
        return out

    def get_schema_operation_parameters(self, view) -> list[dict]:
        """limit, offset and continue."""
        return [*super().get_schema_operation_parameters(view), {
            "name": CONTINUE, "required": False, "in": "query", "schema": {"type": "string"},
            "description": "The `continue` of the previous page: the rows after its last one."}]
