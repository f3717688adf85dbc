"""drf-spectacular extensions: document the token scheme in the OpenAPI schema."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Token <key>` (or `Bearer <key>`)."""

    target_class = "schedweb.api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema) -> dict:
        """The OpenAPI security scheme of token authentication."""
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <key>` or `Bearer <key>`; create keys at /api/v1/tokens/."}
