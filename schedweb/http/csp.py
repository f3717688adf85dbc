"""Content-Security-Policy on every response: same-origin only, no inline script or style.

The dashboard loads its scripts and styles from /static/ (htmx, Plotly, static/dashboard/) and
passes numbers to CSS through data attributes that static/dashboard/bars.js turns into CSS
variables (style="..." attributes would be blocked). Two things need inline content, each
allowed by a per-response nonce, never by 'unsafe-inline': Plotly's own stylesheet (an empty
<style id="plotly.js-style-global" nonce> that Plotly fills through the CSSOM) and the Swagger
UI page (templates/drf_spectacular/swagger_ui.html: its init script and base style). A template
asks for the nonce with {{ request.csp_nonce }}; only a response that used it names it in its
header. Neither Plotly (4.x) nor Swagger UI needs 'unsafe-eval'; Plotly's two inline styles of
its own are allowed by hash (below). data: images are allowed (the Swagger UI stylesheet's
icons); nothing may frame a page, post a form elsewhere or load plugins.

Settings: CSP_REPORT_ONLY (send Content-Security-Policy-Report-Only instead, to try a change),
CSP_DIRECTIVES (a dict of directive -> sources replacing DEFAULT_DIRECTIVES' entries).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"
REPORT_ONLY_HEADER = "Content-Security-Policy-Report-Only"
# Plotly 4.1.1 (static/vendor/plotly.min.js) writes two inline styles of its own, allowed by their
# hashes (a new Plotly fails the browser tests until these are updated): the MapLibre stylesheet
# it adds on load, and empty style="" attributes on the heatmap's colour bar.
PLOTLY_MAPLIBRE_CSS = "'sha256-ji27qzEtxXZW+7dun6UwjHXJ18e6WAin1VvNtkzIE/o='"
EMPTY_STYLE = "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"  # sha256 of "", base64
DEFAULT_DIRECTIVES: dict[str, tuple[str, ...]] = {
    "default-src": ("'self'",),
    "script-src": ("'self'",),
    "style-src": ("'self'", PLOTLY_MAPLIBRE_CSS),
    "style-src-attr": ("'unsafe-hashes'", EMPTY_STYLE),  # style="" only: it can style nothing
    "img-src": ("'self'", "data:"),
    "font-src": ("'self'",),
    "connect-src": ("'self'",),
    "object-src": ("'none'",),
    "base-uri": ("'self'",),
    "form-action": ("'self'",),
    "frame-ancestors": ("'none'",),
}
NONCE_DIRECTIVES = ("script-src", "style-src")


class CspNonce:
    """A per-request nonce made on first use (str()), so that only responses whose template asked
    for it carry it in their header (a cached or JSON response never does)."""

    def __init__(self) -> None:
        self._value: str | None = None

    def __str__(self) -> str:
        """The nonce (128 random bits, URL-safe base64), the same for the whole request."""
        if self._value is None:
            self._value = secrets.token_urlsafe(16)
        return self._value

    @property
    def used(self) -> bool:
        """True once a template (or anything else) read the nonce."""
        return self._value is not None


def directives() -> dict[str, tuple[str, ...]]:
    """DEFAULT_DIRECTIVES with settings.CSP_DIRECTIVES' entries in their place."""
    merged = dict(DEFAULT_DIRECTIVES)
    for name, sources in getattr(settings, "CSP_DIRECTIVES", {}).items():
        merged[name] = tuple(sources)
    return merged


def policy(nonce: str | None = None) -> str:
    """The header value; with `nonce`, script-src and style-src also allow 'nonce-<nonce>'."""
    parts = []
    for name, sources in directives().items():
        if nonce is not None and name in NONCE_DIRECTIVES:
            sources = (*sources, f"'nonce-{nonce}'")
        parts.append(" ".join((name, *sources)))
    return "; ".join(parts)


class ContentSecurityPolicyMiddleware:
    """Gives each request `csp_nonce` and each response the policy (unless a view set its own)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        """Set the nonce, run the view, add the header."""
        nonce = CspNonce()
        request.csp_nonce = nonce
        response = self.get_response(request)
        header = REPORT_ONLY_HEADER if getattr(settings, "CSP_REPORT_ONLY", False) else HEADER
        if header not in response:
            response[header] = policy(str(nonce) if nonce.used else None)
        return response
