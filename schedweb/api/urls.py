"""URLs under /api/: the v1 endpoints, the OpenAPI schema and docs, and a JSON 404 catch-all."""

from __future__ import annotations

from django.urls import include, path, re_path
from rest_framework.routers import DefaultRouter

from schedweb.api.audit.views import AuditEntryViewSet
from schedweb.api.exceptions import NotFoundView
from schedweb.api.views.batch import JobBatchView, JobBulkCancelView
from schedweb.api.views.cluster import NamespaceQuotaViewSet, PriorityClassViewSet, SchedulerConfigViewSet
from schedweb.api.views.cycles import CycleViewSet
from schedweb.api.views.forecast import ForecastListView, JobForecastView, NamespacedJobForecastView
from schedweb.api.views.jobs import JobViewSet, NamespacedJobViewSet, TaskViewSet
from schedweb.api.views.manifests import ManifestExportView, ManifestImportView
from schedweb.api.views.me import MeView
from schedweb.api.views.nodes import NodeViewSet
from schedweb.api.views.placements import JobPlacementsView, NamespacedJobPlacementsView
from schedweb.api.views.preview import QueuePreviewView
from schedweb.api.views.queues import QueueViewSet
from schedweb.api.views.schema import DocsView, SchemaView
from schedweb.api.views.shards import NodeShardViewSet
from schedweb.api.views.tokens import TokenViewSet

app_name = "api"

router = DefaultRouter(trailing_slash=True)
router.register("queues", QueueViewSet, basename="queue")
router.register("nodes", NodeViewSet, basename="node")
router.register("nodeshards", NodeShardViewSet, basename="nodeshard")
router.register("jobs", JobViewSet, basename="job")
router.register("tasks", TaskViewSet, basename="task")
router.register("priority-classes", PriorityClassViewSet, basename="priorityclass")
router.register("namespace-quotas", NamespaceQuotaViewSet, basename="namespacequota")
router.register("tokens", TokenViewSet, basename="token")
router.register("audit", AuditEntryViewSet, basename="audit")
router.register("cycles", CycleViewSet, basename="cycle")

scheduler_config = SchedulerConfigViewSet.as_view({"get": "active", "put": "replace"})
scheduler_config_versions = SchedulerConfigViewSet.as_view({"get": "versions"})
scheduler_config_dry_run = SchedulerConfigViewSet.as_view({"post": "dry_run"})

urlpatterns = [
    path("schema/", SchemaView.as_view(), name="schema"),
    path("docs/", DocsView.as_view(url_name="api:schema"), name="docs"),
    path("v1/scheduler-config/", scheduler_config, name="scheduler-config"),
    path("v1/scheduler-config/versions/", scheduler_config_versions, name="scheduler-config-versions"),
    path("v1/scheduler-config/dry-run/", scheduler_config_dry_run, name="scheduler-config-dry-run"),
    path("v1/me/", MeView.as_view(), name="me"),
    path("v1/manifests/import/", ManifestImportView.as_view(), name="manifest-import"),
    path("v1/manifests/export/", ManifestExportView.as_view(), name="manifest-export"),
    # Forecasts and previews (issue 20), before the router so its detail routes never take them.
    path("v1/jobs/<int:pk>/forecast/", JobForecastView.as_view(), name="job-forecast"),
    path("v1/namespaces/<str:namespace>/jobs/<str:name>/forecast/", NamespacedJobForecastView.as_view(),
         name="namespaced-job-forecast"),
    path("v1/jobs/forecasts/", ForecastListView.as_view(), name="job-forecasts"),
    # Why a job's tasks are on their nodes (issue 17 rule 9): the recorded node scores.
    path("v1/jobs/<int:pk>/placements/", JobPlacementsView.as_view(), name="job-placements"),
    path("v1/namespaces/<str:namespace>/jobs/<str:name>/placements/", NamespacedJobPlacementsView.as_view(),
         name="namespaced-job-placements"),
    re_path(r"^v1/queues/(?P<name>[^/]+)/preview/$", QueuePreviewView.as_view(), name="queue-preview"),
    path("v1/jobs/batch/", JobBatchView.as_view(), name="job-batch"),
    path("v1/jobs/cancel/", JobBulkCancelView.as_view(), name="job-bulk-cancel"),
    path("v1/namespaces/<str:namespace>/jobs/<str:name>/",
         NamespacedJobViewSet.as_view({"get": "retrieve", "delete": "destroy"}), name="namespaced-job"),
    path("v1/namespaces/<str:namespace>/jobs/<str:name>/cancel/",
         NamespacedJobViewSet.as_view({"post": "cancel"}), name="namespaced-job-cancel"),
    path("v1/namespaces/<str:namespace>/jobs/<str:name>/suspend/",
         NamespacedJobViewSet.as_view({"post": "suspend"}), name="namespaced-job-suspend"),
    path("v1/namespaces/<str:namespace>/jobs/<str:name>/resume/",
         NamespacedJobViewSet.as_view({"post": "resume"}), name="namespaced-job-resume"),
    path("v1/", include(router.urls)),
    re_path(r"^.*$", NotFoundView.as_view()),
]
