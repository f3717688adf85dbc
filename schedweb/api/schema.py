"""drf-spectacular extensions: document the token scheme in the OpenAPI schema; send anonymous
browsers from the docs to the sign-in page."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Token <key>` (or `Bearer <key>`)."""

    target_class = "schedweb.api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema) -> dict:
        """The OpenAPI security scheme of token authentication."""
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <key>` or `Bearer <key>`; create keys at /api/v1/tokens/."}


def login_first(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Wrap the docs / schema view: an anonymous browser (no Authorization header, Accept naming
    text/html) is sent to the sign-in page and comes back after it; API clients still get the
    401 error envelope, and signed-in users the view as it is."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        anonymous = not request.user.is_authenticated and "HTTP_AUTHORIZATION" not in request.META
        if anonymous and "text/html" in request.headers.get("Accept", ""):
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapped
