"""URLs of schedweb.scheduling: /metrics."""

from __future__ import annotations

from django.urls import path

from schedweb.scheduling.views import metrics

app_name = "scheduling"
urlpatterns = [path("metrics", metrics, name="metrics")]
