"""Root URLs: the probe, the admin, the API (with its docs behind sign-in for browsers), the API
tokens page, /metrics, and the dashboard (last: it owns "")."""

from __future__ import annotations

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from schedweb.api.schema import login_first
from schedweb.api.views.schema import DocsView, SchemaView
from schedweb.scheduling.healthz import healthz


class FaviconView(RedirectView):
    """/favicon.ico (asked for by browsers that ignore the pages' <link rel="icon">) -> the PNG."""

    permanent = True

    def get_redirect_url(self, *args, **kwargs) -> str:
        """The static URL, resolved per request (the manifest storage knows it only at run time)."""
        return static("favicon.png")


urlpatterns = [
    re_path(r"^healthz/?$", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    # Ahead of the API's own routes (same names kept there for reverse()): anonymous browsers
    # asking for the docs or the schema sign in first instead of reading a 401 body.
    path("api/docs/", login_first(DocsView.as_view(url_name="api:schema"))),
    path("api/schema/", login_first(SchemaView.as_view())),
    path("favicon.ico", FaviconView.as_view()),
    path("tokens/", include("schedweb.api.page_urls")),  # the API tokens page
    path("api/", include("schedweb.api.urls")),
    path("", include("schedweb.scheduling.urls")),  # /metrics
    path("", include("schedweb.dashboard.urls")),
]
