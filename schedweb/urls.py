"""Root URLs. Extension point: each optional app's URLs are included below when it is installed;
add a line to APP_URLS for a new app (prefix, module)."""

from __future__ import annotations

from django.apps import apps
from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

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


if apps.is_installed("schedweb.api"):
    # Ahead of the API's own routes (same names kept there for reverse()): anonymous browsers
    # asking for the docs or the schema sign in first instead of reading a 401 body.
    from schedweb.api.schema import login_first
    from schedweb.api.views.schema import DocsView, SchemaView

    urlpatterns += [path("api/docs/", login_first(DocsView.as_view(url_name="api:schema"))),
                    path("api/schema/", login_first(SchemaView.as_view()))]



class FaviconView(RedirectView):
    """/favicon.ico (asked for by browsers that ignore the pages' <link rel="icon">) -> the PNG."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs) -> str:
        """The static URL, resolved per request (the manifest storage knows it only at run time)."""
        return static("favicon.png")


urlpatterns.append(path("favicon.ico", FaviconView.as_view()))

for prefix, module, app in APP_URLS:
    if apps.is_installed(app) and _has_module(module):
        urlpatterns.append(path(prefix, include(module)))
