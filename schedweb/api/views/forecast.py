"""Estimated starts (issue 20): one job's, by id or namespace/name, and a batch for job lists.

    GET /api/v1/jobs/{id}/forecast/
    GET /api/v1/namespaces/{namespace}/jobs/{name}/forecast/
    GET /api/v1/jobs/forecasts/?ids=1,2,3   (or every stored estimate, paginated, without ids)

Each answers `{job, uid, estimated_start, estimate_basis, sentence, computed_at, until}` from the
newest forecast (schedweb.scheduling.forecast_read): anyone signed in reads them, as jobs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from schedweb.api.pagination import ApiPagination
from schedweb.api.views.base import job_by_id, job_by_name
from schedweb.core.models import Job
from schedweb.scheduling.forecast_read import forecasts_for
from schedweb.scheduling.models import JobForecast

MAX_IDS = 1000
FIELDS = ("id", "namespace", "name", "phase", "created")  # what the answers read of a job
BASES = ("declared", "history", "unknown", "beyond_horizon", "never")


class JobForecastSerializer(serializers.Serializer):
    """One job's estimated start (response only)."""

    job = serializers.IntegerField(help_text="The job's id.")
    uid = serializers.CharField(help_text="namespace/name")
    estimated_start = serializers.DateTimeField(allow_null=True, help_text="When its gang is expected to be "
                                                "bound (null: see estimate_basis).")
    estimate_basis = serializers.ChoiceField(BASES, allow_null=True, help_text=(
        "declared: running jobs end as they declared; history: some end after their queue's median "
        "runtime; unknown: it waits for tasks without a known end; beyond_horizon: not before `until`; "
        "never: it cannot run on the cluster as it stands; null: no estimate (see sentence)."))
    sentence = serializers.CharField(help_text='e.g. "expected to start in about 25 min, if running jobs '
                                               'end as declared" (relative to the request)')
    computed_at = serializers.DateTimeField(allow_null=True, help_text="When the forecast ran (its state).")
    until = serializers.DateTimeField(allow_null=True, help_text="The last instant the forecast simulated.")


def now() -> datetime:
    """The request's time (the sentence is relative to it); tests replace it."""
    return timezone.now()


def _answer(jobs: list[Job]) -> list[dict[str, Any]]:
    found = forecasts_for(jobs, now())
    return [{"job": job.pk, "uid": f"{job.namespace}/{job.name}", **found[job.pk]} for job in jobs]


class JobForecastView(APIView):
    """The estimated start of one job (by id)."""

    @extend_schema(responses={200: JobForecastSerializer}, operation_id="v1_jobs_forecast_retrieve",
                   summary="Get a job's estimated start")
    def get(self, request, pk: int):
        """The job's estimated start from the newest forecast."""
        job = job_by_id(pk, FIELDS)
        return Response(_answer([job])[0])


class NamespacedJobForecastView(APIView):
    """The estimated start of one job (by namespace and name)."""

    @extend_schema(responses={200: JobForecastSerializer},
                   operation_id="v1_namespaces_jobs_forecast_retrieve",
                   summary="Get a job's estimated start by namespace and name")
    def get(self, request, namespace: str, name: str):
        """The job's estimated start from the newest forecast."""
        job = job_by_name(namespace, name, FIELDS)
        return Response(_answer([job])[0])


def parse_ids(request) -> list[int] | None:
    """`?ids=1,2,3` (also repeated `ids=`): at most MAX_IDS positive 32-bit ids; None when absent."""
    raw = request.query_params.getlist("ids")
    if not raw:
        return None
    ids: list[int] = []
    for part in ",".join(raw).split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isascii() or not part.isdigit() or not 0 < int(part) < 2**31:
            raise serializers.ValidationError(
                {"ids": [f"Expected job ids (positive integers), got {part[:40]!r}."]})
        ids.append(int(part))
    if len(ids) > MAX_IDS:
        raise serializers.ValidationError({"ids": [f"At most {MAX_IDS} ids at once, got {len(ids)}."]})
    return list(dict.fromkeys(ids))


class ForecastListView(APIView):
    """Estimated starts of many jobs at once (the job lists)."""

    pagination_class = ApiPagination

    @extend_schema(
        parameters=[OpenApiParameter("ids", OpenApiTypes.STR, description=(
            f"Comma-separated job ids (at most {MAX_IDS}): one answer each, in this order, unknown ids "
            "left out. Without it: every job the newest forecast answered, by id, paginated.")),
            OpenApiParameter("limit", OpenApiTypes.INT), OpenApiParameter("offset", OpenApiTypes.INT),
            OpenApiParameter("continue", OpenApiTypes.STR, description="The previous page's `continue`.")],
        responses={200: JobForecastSerializer(many=True)}, operation_id="v1_jobs_forecasts_list",
        summary="List the estimated starts of jobs")
    def get(self, request):
        """`{"results": [...]}` for `ids`, else a page of `{count, next, previous, results}`."""
        ids = parse_ids(request)
        if ids is not None:
            jobs = Job.objects.filter(pk__in=ids).only(*FIELDS).in_bulk()
            return Response({"results": _answer([jobs[pk] for pk in ids if pk in jobs])})
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            Job.objects.filter(pk__in=JobForecast.objects.values("job_id")).only(*FIELDS).order_by("id"),
            request, view=self)
        return paginator.get_paginated_response(_answer(list(page)))
