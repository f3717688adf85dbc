"""The client address every throttle keys on (API rates, refused tokens, failed logins).

`X-Forwarded-For` is whatever the client wrote, unless a proxy we run appended to it: only the
entries our own proxies added can be believed. With TRUSTED_PROXY_COUNT = 0 (the default: the
web server is reached directly, as docker-compose's gunicorn is) the address is REMOTE_ADDR and
the header is ignored, so rotating it neither escapes a limit nor adds a counter. With N trusted
proxies in front, each appending the address it saw, the client is the N-th entry from the right
(the one the outermost trusted proxy added); entries left of it are the client's own and ignored.
A header with fewer entries than N (a request that bypassed a proxy) or an entry that is not an
IP address falls back to REMOTE_ADDR: a throttle never keys on text a client chose.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings


def trusted_proxy_count() -> int:
    """settings.TRUSTED_PROXY_COUNT (env, default 0): proxies of ours in front of the web server."""
    return max(0, int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0))


def _normalised(text: str) -> str | None:
    """`text` as a canonical IP address (IPv4-mapped IPv6 as IPv4), or None if it is none."""
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def client_address(request: Any) -> str:
    """The address of the client behind `request` (a Django or DRF request; "" when none)."""
    if request is None:
        return ""
    meta = getattr(request, "META", None) or getattr(getattr(request, "_request", None), "META", {})
    remote = meta.get("REMOTE_ADDR") or ""
    proxies = trusted_proxy_count()
    if proxies:
        entries = [part for part in (meta.get("HTTP_X_FORWARDED_FOR") or "").split(",") if part.strip()]
        if len(entries) >= proxies:
            found = _normalised(entries[-proxies])
            if found is not None:
                return found
    return _normalised(remote) or remote
