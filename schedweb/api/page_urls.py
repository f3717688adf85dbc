"""URLs of the API app's pages (mounted at /tokens/ by schedweb/urls.py, namespace "tokens")."""

from __future__ import annotations

from django.urls import path

from schedweb.api import pages

app_name = "tokens"

urlpatterns = [
    path("", pages.tokens, name="list"),
    path("<int:pk>/revoke/", pages.token_revoke_view, name="revoke"),
]
