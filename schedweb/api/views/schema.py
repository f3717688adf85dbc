"""The OpenAPI schema and Swagger UI views, with errors (401) in the JSON envelope."""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer


class JsonErrorsMixin:
    """Render errors with JSON: the schema renderers would dump the error body as an OpenAPI
    document, the Swagger template as bare text."""

    permission_classes = [IsAuthenticated]

    def handle_exception(self, exc):
        """Render errors with JSON, whatever format was negotiated."""
        response = super().handle_exception(exc)
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class SchemaView(JsonErrorsMixin, SpectacularAPIView):
    """OpenAPI 3 schema of /api/v1/ (YAML by default, JSON with ?format=json); signed-in users."""


class DocsView(JsonErrorsMixin, SpectacularSwaggerView):
    """Swagger UI served from drf-spectacular-sidecar's static files (works offline)."""
