"""Why a job's tasks are on their nodes (issue 17 rule 9): the node scores the cycles recorded.

    GET /api/v1/jobs/{id}/placements/
    GET /api/v1/namespaces/{namespace}/jobs/{name}/placements/

Both answer `{job, uid, note, count, next, previous, results}`: the newest recorded placement of
each of the job's tasks (newest cycle first, then by task name; `?limit=&offset=`), each with the
chosen node's scores and the try's best nodes (scheduler_core.explain.node_scores' NodeScore JSON), as
the job page's "Why these nodes" shows them (schedweb.scheduling.placement_scores). `note` says
why a placed job has none ("scores not recorded: a burst of N tasks was placed ..."), else "".
Anyone signed in reads them, as jobs.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from schedweb.api.pagination import ApiPagination
from schedweb.api.views.base import job_by_id, job_by_name
from schedweb.core.models import Job
from schedweb.scheduling.placement_scores import latest_records, record_json, unrecorded_note

FIELDS = ("id", "namespace", "name", "created")  # what the answer reads of a job


class NodeScoreSerializer(serializers.Serializer):
    """One node's scores in the try (response only)."""

    node = serializers.CharField()
    total = serializers.FloatField(help_text="The total the scheduler ranked the nodes by (the sum of "
                                             "the plugins' parts).")
    plugins = serializers.DictField(child=serializers.FloatField(),
                                    help_text='Each node-order plugin\'s part, e.g. {"binpack": 62.5, '
                                              '"nodeorder": 250}.')
    pipelined = serializers.BooleanField(help_text="Only the node's future room (after releases) fitted.")


class PlacementSerializer(serializers.Serializer):
    """The newest recorded placement of one task (response only)."""

    task = serializers.CharField(help_text="The task's name.")
    node = serializers.CharField(help_text="The node the cycle bound or pipelined it to.")
    pipelined = serializers.BooleanField()
    action = serializers.CharField(help_text="The action that placed it: allocate, backfill, preempt, "
                                             "reclaim.")
    cycle = serializers.IntegerField(help_text="The scheduling cycle's id.")
    cycle_started = serializers.DateTimeField()
    chosen_scores = NodeScoreSerializer(allow_null=True, help_text=(
        "The chosen node's scores (null: the task got the node from an earlier try of the cycle)."))
    top = NodeScoreSerializer(many=True, help_text="The try's best nodes, best first "
                                                   "(SCHEDULER_RECORD_SCORES of them).")


class JobPlacementsSerializer(serializers.Serializer):
    """A page of a job's recorded placements (response only)."""

    job = serializers.IntegerField(help_text="The job's id.")
    uid = serializers.CharField(help_text="namespace/name")
    note = serializers.CharField(help_text="Why a placed job has no recorded scores (a burst, recording "
                                           "off); empty otherwise.")
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PlacementSerializer(many=True)


# `continue` (the next page's token, schedweb.api.pagination) is a Python keyword: added by name.
JobPlacementsSerializer._declared_fields["continue"] = serializers.CharField(
    allow_null=True, help_text="Token of the next page (?continue=); null on the last page.")


PARAMETERS = [OpenApiParameter("limit", OpenApiTypes.INT), OpenApiParameter("offset", OpenApiTypes.INT),
              OpenApiParameter("continue", OpenApiTypes.STR, description="The previous page's `continue`.")]


class _Placements(APIView):
    """Shared answer of both paths."""

    pagination_class = ApiPagination

    def answer(self, request, job: Job) -> Response:
        """The page of the job's newest recorded placements, with its note."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(latest_records(job.pk), request, view=self)
        body: dict[str, Any] = {"job": job.pk, "uid": f"{job.namespace}/{job.name}",
                                "note": "" if page else unrecorded_note(job)}
        body.update(paginator.get_paginated_response([record_json(r) for r in page]).data)
        return Response(body)


class JobPlacementsView(_Placements):
    """The recorded placements of one job (by id)."""

    @extend_schema(parameters=PARAMETERS, responses={200: JobPlacementsSerializer},
                   operation_id="v1_jobs_placements_retrieve",
                   summary="Get why a job's tasks are on their nodes")
    def get(self, request, pk: int):
        """The node scores of the job's placements, newest first."""
        job = job_by_id(pk, FIELDS)
        return self.answer(request, job)


class NamespacedJobPlacementsView(_Placements):
    """The recorded placements of one job (by namespace and name)."""

    @extend_schema(parameters=PARAMETERS, responses={200: JobPlacementsSerializer},
                   operation_id="v1_namespaces_jobs_placements_retrieve",
                   summary="Get why a job's tasks are on their nodes, by namespace and name")
    def get(self, request, namespace: str, name: str):
        """The node scores of the job's placements, newest first."""
        job = job_by_name(namespace, name, FIELDS)
        return self.answer(request, job)
