"""Limit/offset pagination with a hard maximum page size, strict about its parameters."""

from __future__ import annotations

from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination

from schedweb.api.filter_backends import check_ordering


class ApiPagination(LimitOffsetPagination):
    """`?limit=&offset=`; default 50 items, never more than 1000 in one page (a larger limit is
    cut to 1000). A limit that is not a whole number from 1, an offset that is not a whole number
    from 0, or an `ordering` the list does not offer is a 400 naming the parameter (every
    paginated list: schedweb.api.filter_backends)."""

    default_limit = 50
    max_limit = 1000

    def _whole(self, request, name: str, minimum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None or raw.strip() == "":
            return None
        text = raw.strip()
        if not text.isdigit() or int(text) < minimum:
            raise serializers.ValidationError({name: [f"Expected a whole number of at least {minimum}, "
                                                      f"not {raw!r}."]})
        return int(text)

    def get_limit(self, request) -> int:
        """The page size asked for (at most max_limit), else the default."""
        value = self._whole(request, self.limit_query_param, 1)
        return self.default_limit if value is None else min(value, self.max_limit)

    def get_offset(self, request) -> int:
        """Rows to skip (0 when absent)."""
        return self._whole(request, self.offset_query_param, 0) or 0

    def paginate_queryset(self, queryset, request, view=None):
        """Check `ordering` against what the view offers, then page."""
        check_ordering(queryset, request, view)
        return super().paginate_queryset(queryset, request, view)
