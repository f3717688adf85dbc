"""Token authentication: `Authorization: Token <key>` (or `Bearer <key>`), keys hashed at rest."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from schedweb.api.services import token_authenticate


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticates portals and scripts by an ApiToken; listed first so anonymous requests get 401."""

    keywords = ("token", "bearer")

    def authenticate(self, request):
        """Return (user, token) for a valid key, None when no token header is present."""
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].decode(errors="replace").lower() not in self.keywords:
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Token <key>'.")
        try:
            raw = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token header: key is not ASCII.") from exc
        token = token_authenticate(raw_key=raw)
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        return token.user, token

    def authenticate_header(self, request) -> str:
        """Makes DRF answer 401 (not 403) to unauthenticated requests."""
        return 'Token realm="api"'
