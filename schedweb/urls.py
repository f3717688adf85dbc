"""Root URLs. Extension point: each optional app's URLs are included below when it is installed;
add a line to APP_URLS for a new app (prefix, module)."""

from __future__ import annotations

from django.apps import apps
from django.contrib import admin
from django.urls import include, path, re_path

from schedweb.core.views import healthz

# (URL prefix, urls module, app that must be installed). Order matters: "" (dashboard) last.
APP_URLS: list[tuple[str, str, str]] = [
    ("api/", "schedweb.api.urls", "schedweb.api"),
    ("", "schedweb.scheduling.urls", "schedweb.scheduling"),  # /metrics
    ("", "schedweb.dashboard.urls", "schedweb.dashboard"),
]

urlpatterns = [
    re_path(r"^healthz/?$", healthz, name="healthz"),
    path("admin/", admin.site.urls),
]


def _has_module(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


for prefix, module, app in APP_URLS:
    if apps.is_installed(app) and _has_module(module):
        urlpatterns.append(path(prefix, include(module)))
