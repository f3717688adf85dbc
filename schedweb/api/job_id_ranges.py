"""`?id=` of the API's job list: jobs by id and id range ("12-40,45"), the list a batch's 201
points its `Location` at (exactly the batch's jobs, whatever else is in the cluster).

Ranges keep that header short: one batch writes its jobs in one statement, so their ids run
on, and a thousand of them are one range instead of ~8 KB of ids (proxies refuse response
headers past 4-8 KB).
"""

from __future__ import annotations

from collections.abc import Iterable

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from schedweb.core.filtersets import JobFilterSet

MAX_PIECES = 1000  # ids or ranges in one value (a batch has at most MAX_JOBS_PER_BATCH jobs)
MAX_ID = 2**63 - 1


def id_ranges(ids: Iterable[int]) -> str:
    """The ids as the filter reads them: sorted, runs as `a-b`: [3, 1, 2, 7] -> "1-3,7"."""
    pieces: list[str] = []
    run: list[int] = []
    for pk in sorted(set(ids)):
        if run and pk == run[-1] + 1:
            run[-1] = pk
            continue
        if run:
            pieces.append(_piece(run))
        run = [pk, pk]
    if run:
        pieces.append(_piece(run))
    return ",".join(pieces)


def _piece(run: list[int]) -> str:
    return str(run[0]) if run[0] == run[1] else f"{run[0]}-{run[1]}"


class IdRangesField(forms.CharField):
    """"1-3,7": a list of (low, high) id pairs; anything else is a form error naming the piece."""

    def clean(self, value: str | None) -> list[tuple[int, int]] | None:
        """The ranges, or None when the parameter is absent."""
        value = super().clean(value)
        if value in (None, ""):
            return None
        pieces = value.split(",")
        if len(pieces) > MAX_PIECES:
            raise forms.ValidationError(f"At most {MAX_PIECES} ids or ranges, got {len(pieces)}.")
        ranges = []
        for piece in pieces:
            low, _, high = piece.strip().partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise forms.ValidationError(f"Expected job ids or ranges such as 12-40, not {piece!r}.")
            pair = (int(low), int(high or low))
            if pair[0] > pair[1] or pair[1] > MAX_ID:
                raise forms.ValidationError(f"Not a range of job ids: {piece!r}.")
            ranges.append(pair)
        return ranges


class IdRangesFilter(django_filters.Filter):
    """Jobs whose id is in one of the ranges."""

    field_class = IdRangesField

    def filter(self, qs: QuerySet, value: list[tuple[int, int]] | None) -> QuerySet:
        """The rows in any range (the rows unchanged when absent)."""
        if not value:
            return qs
        where = Q()
        for low, high in value:
            where |= Q(id=low) if low == high else Q(id__gte=low, id__lte=high)
        return qs.filter(where)


class ApiJobFilterSet(JobFilterSet):
    """The shared job filters and, for the API, `id` (ids and ranges: "12-40,45")."""

    id = IdRangesFilter(label="Job ids and id ranges, comma-separated: 12-40,45")

    class Meta(JobFilterSet.Meta):
        fields = [*JobFilterSet.Meta.fields, "id"]
