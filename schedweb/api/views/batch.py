"""Jobs in bulk, for portals: `POST /api/v1/jobs/batch/` (submit many) and `POST /api/v1/jobs/cancel/`
(cancel by selector). Both answer per job, in request order.

Batch submission goes through the single submission's path (schedweb.api.commands.submit_jobs):
one read for the whole batch, one statement writing every job and task. All or nothing by
default: any bad item fails the request (its status, the first failing item's: 400, 403 or
409) and the error body lists every item's problems under `jobs[<i>].<field>`; nothing is
written. `?partial=true` writes the good items and answers each (201 created, 200 replayed, or
its own error envelope). Each item may carry its own `idempotency_key` (the body it is bound to
is the item without the key).

Where the jobs are: each answered job's result carries `url`, the job's own detail path (what a
single submission's `Location` says); the 201 carries `Location: /api/v1/jobs/?id=<ids>`, the
job list of exactly the batch's jobs (created and replayed ones: a retried batch gets the same
one), its ids as runs (`12-40,45`: schedweb.api.job_id_ranges).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.functions import Left
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from scheduler_core.shapes import ShapeError, check_text
from schedweb.api import commands, pending_gate
from schedweb.api.exceptions import api_error_body, as_api_exception, error_body
from schedweb.api.job_id_ranges import id_ranges
from schedweb.api.serializers.base import StrictSerializer
from schedweb.api.serializers.jobs import (
    JobSerializer,
    JobSubmitSerializer,
    SubmitWarningSerializer,
    validate_submission,
)
from schedweb.api.views.base import access
from schedweb.core.job_services import job_cancel_many
from schedweb.core.models import TERMINAL_JOB_PHASES, Job, Queue


def max_batch() -> int:
    """settings.MAX_JOBS_PER_BATCH (default 1,000): jobs per batch request, jobs per cancel request."""
    return int(getattr(settings, "MAX_JOBS_PER_BATCH", 1000))


def _bad_text(value: Any) -> str | None:
    """Why `value` cannot be stored or looked up (NUL, control characters, lone surrogates)."""
    if not isinstance(value, str):
        return None
    try:
        check_text(value, "text", max_length=1 << 20)
    except ShapeError as exc:
        return exc.message
    return None


def _flag(request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw in (None, "", "false", "0", "no"):
        return False
    if raw in ("true", "1", "yes"):
        return True
    raise serializers.ValidationError({name: [f"Expected true or false, not {raw!r}."]})


class JobBatchItemSerializer(JobSubmitSerializer):
    """One job of a batch: the single submission's body plus its own Idempotency-Key."""

    idempotency_key = serializers.CharField(required=False, allow_null=True, max_length=255, help_text=(
        "As the Idempotency-Key header of a single submission, bound to this item's body (without "
        "the key)."))


class JobBatchSerializer(StrictSerializer):
    """A batch of jobs (schema only: the view validates item by item, each on its own)."""

    jobs = JobBatchItemSerializer(many=True, allow_empty=False)


BATCH_RESULT = inline_serializer("BatchResult", {
    "created": serializers.IntegerField(), "replayed": serializers.IntegerField(),
    "failed": serializers.IntegerField(),
    "results": inline_serializer("BatchItemResult", {
        "index": serializers.IntegerField(),
        "status": serializers.IntegerField(help_text="201 created, 200 replayed (a known idempotency_key), "
                                                     "else the item's error status"),
        "job": JobSerializer(allow_null=True),
        "url": serializers.CharField(allow_null=True, help_text=(
            "The job's detail path (/api/v1/jobs/{id}/), null for a failed item")),
        "warnings": SubmitWarningSerializer(many=True),
        "error": serializers.JSONField(allow_null=True, help_text="The error envelope's `error` object"),
    }, many=True)})


def _prefixed(index: int, body: dict) -> dict[str, list[str]]:
    """An item's error fields under `jobs[<index>]` (its message when it names no field)."""
    err = body["error"]
    fields = err.get("fields") or {"": [err["message"]]}
    return {f"jobs[{index}]" + (f".{k}" if k and k != "non_field_errors" else ""): v
            for k, v in fields.items()}


class JobBatchView(APIView):
    """Submit many jobs in one request (at most MAX_JOBS_PER_BATCH)."""

    @extend_schema(
        operation_id="v1_jobs_batch", request=JobBatchSerializer, responses={
            201: BATCH_RESULT, 200: BATCH_RESULT, 400: OpenApiResponse(description=(
                "All or nothing: a bad item; `fields` lists every item's problems as jobs[i].<field>"))},
        parameters=[OpenApiParameter("partial", bool, description=(
            "true: write the good items and answer each with its own status (200 overall)")),
            OpenApiParameter("Location", str, OpenApiParameter.HEADER, response=[201], description=(
                "The job list of exactly the batch's jobs: /api/v1/jobs/?id=<ids and id ranges>"))])
    def post(self, request):
        """Submit jobs as a portal's sweep does: all or nothing, or `?partial=true` per item."""
        partial = _flag(request, "partial")
        raw_jobs = self._jobs(request.data)
        # At MAX_PENDING_JOBS_PER_USER every item is refused before any is validated, as the
        # submission path would refuse each (schedweb.api.pending_gate); known keys go on.
        over = pending_gate.check_batch(request.user, raw_jobs)
        if over is not None:
            items, where, errors = [], [], {i: over for i in range(len(raw_jobs))}
        else:
            items, where, errors = self._items(raw_jobs)
        outcomes: list[commands.SubmitOutcome] = []
        if items and (partial or not errors):
            outcomes = commands.submit_jobs(access=access(request), items=items, atomic=not partial,
                                            warnings=True)
        for i, outcome in zip(where, outcomes, strict=False):
            if outcome.error is not None:
                errors[i] = outcome.error
        if errors and not partial:
            return self._failed(errors)
        by_index = dict(zip(where, outcomes, strict=False))
        results, counts = [], {"created": 0, "replayed": 0, "failed": 0}
        shown = [o.job for i, o in sorted(by_index.items()) if i not in errors]
        # One serializer for every job: DRF copies a serializer's fields per instance. No cycle
        # has seen a job just submitted (JobSerializer.cycle: null, and no query).
        rendered = iter(JobSerializer(shown, many=True, context={"request": request, "cycle": None}).data)
        for i in range(len(raw_jobs)):
            if i in errors:
                exc = as_api_exception(errors[i])
                results.append({"index": i, "status": exc.status_code, "job": None, "url": None,
                                "warnings": [], "error": api_error_body(exc)["error"]})
                counts["failed"] += 1
                continue
            outcome = by_index[i]
            counts["created" if outcome.created else "replayed"] += 1
            results.append({"index": i, "status": 201 if outcome.created else 200,
                            "job": next(rendered), "url": reverse("api:job-detail", args=[outcome.job.pk]),
                            "warnings": list(getattr(outcome.job, "submit_warnings", None) or []),
                            "error": None})
        if partial:
            return Response({**counts, "results": results}, status=status.HTTP_200_OK)
        where_all = f"{reverse('api:job-list')}?id={id_ranges(job.pk for job in shown)}"
        return Response({**counts, "results": results}, status=status.HTTP_201_CREATED,
                        headers={"Location": where_all})

    @staticmethod
    def _items(raw_jobs: list[Any]) -> tuple[list[commands.SubmitItem], list[int], dict[int, Exception]]:
        """Each item validated on its own: the submit items, their indexes, the items' errors."""
        items: list[commands.SubmitItem] = []
        where: list[int] = []                      # item -> index in the request
        errors: dict[int, Exception] = {}
        for i, raw in enumerate(raw_jobs):
            if not isinstance(raw, dict):
                errors[i] = serializers.ValidationError({"non_field_errors": ["Expected a job object."]})
                continue
            body = {k: v for k, v in raw.items() if k != "idempotency_key"}
            key = raw.get("idempotency_key")
            try:
                data = validate_submission(body)
            except serializers.ValidationError as exc:
                errors[i] = exc
                continue
            if key is not None and (not isinstance(key, str) or len(key) > 255 or not key.strip()
                                    or _bad_text(key)):
                errors[i] = serializers.ValidationError({"idempotency_key": [
                    _bad_text(key) or "A non-blank string of at most 255 characters."]})
                continue
            key = key.strip() if key else None
            items.append(commands.SubmitItem(data, key, commands.body_hash(body) if key else ""))
            where.append(i)
        return items, where, errors

    @staticmethod
    def _jobs(data: Any) -> list[Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": [
                "Expected a JSON object {\"jobs\": [...]}."]})
        unknown = sorted(set(data) - {"jobs"}, key=str)
        if unknown:
            raise serializers.ValidationError({str(k): ["Unknown field."] for k in unknown})
        jobs = data.get("jobs")
        if not isinstance(jobs, list) or not jobs:
            raise serializers.ValidationError({"jobs": ["Expected a non-empty list of jobs."]})
        if len(jobs) > max_batch():
            raise serializers.ValidationError({"jobs": [
                f"At most {max_batch()} jobs per batch (MAX_JOBS_PER_BATCH), got {len(jobs)}."]})
        return jobs

    @staticmethod
    def _failed(errors: dict[int, Exception]) -> Response:
        """All or nothing: the first failing item's status, every item's problems."""
        first = min(errors)
        fields: dict[str, list[str]] = {}
        codes = {}
        for i in sorted(errors):
            exc = as_api_exception(errors[i])
            codes[i] = (exc.status_code, api_error_body(exc))
            fields.update(_prefixed(i, codes[i][1]))
        code, body = codes[first]
        message = f"jobs[{first}]: {body['error']['message']} (nothing was submitted)"
        return Response(error_body(body["error"]["code"], message, fields), status=code)


class CancelSelectorSerializer(StrictSerializer):
    """Which jobs to cancel: `ids`, or unfinished jobs by `namespace`, `name_prefix` and `queue`."""

    ids = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
                                required=False, allow_empty=False,
                                help_text="These jobs (each answered, 404 when unknown)")
    namespace = serializers.RegexField(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63, required=False)
    name_prefix = serializers.CharField(required=False, max_length=253, help_text="Jobs whose name starts so "
                                        "(with namespace or queue)")
    queue = serializers.CharField(required=False, max_length=253)

    def validate_name_prefix(self, value: str) -> str:
        """Text that can be looked up."""
        return self._text(value)

    def validate_queue(self, value: str) -> str:
        """Text that can be looked up."""
        return self._text(value)

    @staticmethod
    def _text(value: str) -> str:
        problem = _bad_text(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate(self, attrs: dict) -> dict:
        """`ids` alone, or a namespace and/or queue (with an optional name prefix)."""
        if "ids" in attrs:
            others = sorted(k for k in attrs if k != "ids")
            if others:
                raise serializers.ValidationError({others[0]: ["Give either ids or a selector, not both."]})
            if len(attrs["ids"]) > max_batch():
                raise serializers.ValidationError({"ids": [f"At most {max_batch()} ids per request."]})
        elif not ({"namespace", "queue"} & set(attrs)):
            raise serializers.ValidationError({"non_field_errors": [
                "Give ids, or a namespace and/or a queue (optionally with name_prefix)."]})
        if "queue" in attrs and not Queue.objects.filter(name=attrs["queue"]).exists():
            raise serializers.ValidationError({"queue": [f"Unknown queue {attrs['queue']!r}."]})
        return attrs


CANCEL_RESULT = inline_serializer("BulkCancelResult", {
    "cancelled": serializers.IntegerField(), "failed": serializers.IntegerField(),
    "forbidden": serializers.IntegerField(help_text="Selector: matching jobs the caller may not cancel (not "
                                                    "listed)"),
    "more": serializers.BooleanField(help_text="Selector: more of the caller's jobs match; send it again"),
    "results": inline_serializer("BulkCancelItem", {
        "id": serializers.IntegerField(), "uid": serializers.CharField(allow_null=True),
        "status": serializers.IntegerField(), "phase": serializers.CharField(allow_null=True),
        "error": serializers.JSONField(allow_null=True)}, many=True)})


class JobBulkCancelView(APIView):
    """Cancel many jobs: `ids` (each answered: 200, 403, 404, 400 for a completed job), or a
    selector (unfinished jobs by namespace, queue, name prefix) of which the caller's cancellable
    ones are cancelled and answered, at most MAX_JOBS_PER_BATCH per request (`more`: repeat it),
    and the others counted (`forbidden`). Set-based, one transaction, one audit entry per job."""

    @extend_schema(request=CancelSelectorSerializer, responses={200: CANCEL_RESULT},
                   operation_id="v1_jobs_bulk_cancel")
    def post(self, request):
        """Cancel the selected jobs (at most MAX_JOBS_PER_BATCH per request; `more` says to repeat)."""
        serializer = CancelSelectorSerializer(data=request.data if isinstance(request.data, dict) else None)
        serializer.is_valid(raise_exception=True)
        sel = serializer.validated_data
        jobs = Job.objects.select_related("queue").order_by("id")
        acl, forbidden, more = access(request), 0, False
        if "ids" in sel:
            wanted = list(dict.fromkeys(sel["ids"]))
            found = {j.pk: j for j in jobs.filter(pk__in=wanted)}
            allowed = [pk for pk in wanted if pk in found and acl.can_cancel(found[pk])]
        else:
            # The caller's cancellable jobs only (so a repeated request always makes progress);
            # the others the selector matches are counted in `forbidden`.
            scope = jobs.exclude(phase__in=TERMINAL_JOB_PHASES)
            if "namespace" in sel:
                scope = scope.filter(namespace=sel["namespace"])
            if "queue" in sel:
                scope = scope.filter(queue__name=sel["queue"])
            if sel.get("name_prefix"):
                # startswith for the index; the exact prefix because SQLite's LIKE ignores case.
                prefix = sel["name_prefix"]
                scope = scope.filter(name__startswith=prefix).alias(
                    head=Left("name", len(prefix))).filter(head=prefix)
            found = {}
            for job in scope.iterator(chunk_size=1000):
                if not acl.can_cancel(job):
                    forbidden += 1
                elif len(found) == max_batch():
                    more = True
                    break
                else:
                    found[job.pk] = job
            wanted = allowed = list(found)
        done = job_cancel_many(job_ids=allowed, actor=request.user) if allowed else {}
        results, counts = [], {"cancelled": 0, "failed": 0}
        for pk in wanted:
            job, entry = found.get(pk), None
            if job is None:
                entry = (404, error_body("not_found", f"No job with id {pk}.")["error"], None)
            elif pk not in done:
                entry = (403, error_body("permission_denied", "Only the submitter or an admin of the job's "
                                                              "queue may cancel it.")["error"], None)
            elif not isinstance(done[pk], Job):
                exc = as_api_exception(done[pk])
                entry = (exc.status_code, api_error_body(exc)["error"], None)
            else:
                entry = (200, None, done[pk].phase)
            counts["cancelled" if entry[0] == 200 else "failed"] += 1
            results.append({"id": pk, "uid": job.uid if job is not None else None, "status": entry[0],
                            "phase": entry[2], "error": entry[1]})
        return Response({**counts, "forbidden": forbidden, "more": more, "results": results})
