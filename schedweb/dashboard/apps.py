"""Dashboard app config."""

from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Server-rendered pages over the same selectors and ACLs as the API."""

    name = "schedweb.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
