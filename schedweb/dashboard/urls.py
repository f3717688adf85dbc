"""Dashboard URLs (mounted at the site root) and sign in / sign out."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from schedweb.dashboard.views import (
    audit,
    job_lists,
    job_suspend,
    jobs,
    mine,
    nodes,
    overview,
    queues,
    shards,
)

app_name = "dashboard"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path("queues/", queues.queue_tree, name="queue-tree"),
    path("queues/<str:name>/", queues.queue_detail, name="queue"),
    path("queues/<str:name>/chart.json", queues.queue_chart_data, name="queue-chart"),
    path("queues/<str:name>/edit/", queues.queue_edit, name="queue-edit"),
    path("queues/<str:name>/preview/", queues.queue_preview, name="queue-preview"),
    path("queues/<str:name>/state/", queues.queue_state, name="queue-state"),
    path("jobs/pending/", jobs.pending_list, name="pending"),
    path("jobs/", job_lists.job_list, name="jobs"),
    path("jobs/mine/", job_lists.my_jobs, name="my-jobs"),
    path("jobs/<str:namespace>/<str:name>/cancel/", job_lists.job_cancel, name="job-cancel"),
    path("jobs/<str:namespace>/<str:name>/suspend/", job_suspend.job_suspend, name="job-suspend"),
    path("jobs/<str:namespace>/<str:name>/resume/", job_suspend.job_resume, name="job-resume"),
    path("jobs/<str:namespace>/<str:name>/", jobs.job_detail, name="job"),
    path("jobs/<int:pk>/", jobs.job_by_id, name="job-by-id"),
    path("nodes/", nodes.nodes, name="nodes"),
    path("nodes/<str:name>/", nodes.node_detail, name="node"),
    path("shards/", shards.shard_list, name="shards"),
    path("shards/<str:name>/", shards.shard_detail, name="shard"),
    path("shards/<str:name>/edit/", shards.shard_edit, name="shard-edit"),
    path("mine/", mine.my_queues, name="mine"),
    path("audit/", audit.audit_log, name="audit"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="dashboard:login"), name="logout"),
]
