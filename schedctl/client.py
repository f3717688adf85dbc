"""A small JSON client of /api/v1/ over urllib: token header, error envelope, list pages."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from typing import Any
from urllib import error, request
from urllib.parse import quote, urlencode

from schedctl.errors import ApiError, ConnectError, Locator

USER_AGENT = "schedctl/0.1"
PAGE_SIZE = 1000  # the API's maximum page
Params = Mapping[str, str | int | list[str]] | None


def path_part(value: str) -> str:
    """One URL path segment (a queue, node or job name may hold characters that need quoting)."""
    return quote(str(value), safe="")


class ApiClient:
    """Requests against one server with one token; every answer is JSON (or nothing, for a 204)."""

    def __init__(self, server: str, token: str | None, timeout: float = 60.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def url(self, path: str, params: Params = None) -> str:
        """Absolute URL of an API path with its query string (lists repeat their key)."""
        query = urlencode({k: v for k, v in (params or {}).items() if v not in (None, "", [])}, doseq=True)
        return f"{self.server}{path}" + (f"?{query}" if query else "")

    def request(self, method: str, path: str, *, params: Params = None, body: Any = None,
                raw: bytes | None = None, content_type: str = "application/json",
                locate: Locator | None = None) -> Any:
        """Send one request; return the decoded JSON answer (None when empty).

        Raises ApiError for an HTTP error (its envelope decoded; `locate` maps field paths to the
        submitted file's lines) and ConnectError when the server cannot be reached.
        """
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        req = request.Request(self.url(path, params), data=data, headers=headers, method=method)
        try:
            with request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - http(s) only (config)
                return _decode(resp.read(), resp.status, resp.reason)
        except error.HTTPError as exc:
            raise _api_error(exc, locate, has_token=bool(self.token)) from None
        except error.URLError as exc:
            raise ConnectError(f"cannot connect to {self.server}: {_why(exc.reason)}") from None
        except TimeoutError:
            raise ConnectError(f"no answer from {self.server} within {self.timeout:g}s") from None
        except (ConnectionError, OSError) as exc:  # a reset or a closed connection mid-answer
            raise ConnectError(f"connection to {self.server} failed: {_why(exc)}") from None

    def get(self, path: str, params: Params = None) -> Any:
        """GET `path`."""
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, params: Params = None, **kwargs: Any) -> Any:
        """POST a JSON `body` (or `raw=` bytes with `content_type=`) to `path`."""
        return self.request("POST", path, params=params, body=body, **kwargs)

    def patch(self, path: str, body: Any) -> Any:
        """PATCH a JSON `body` to `path` (only the keys to change)."""
        return self.request("PATCH", path, body=body)

    def delete(self, path: str) -> Any:
        """DELETE `path` (None for a 204)."""
        return self.request("DELETE", path)

    def iter_list(self, path: str, params: Params = None, limit: int = 0) -> Iterator[dict]:
        """Every item of a paginated list, at most `limit` when above 0. Pages are followed by
        their `continue` token (keyset pages: rows arriving meanwhile neither repeat nor hide
        one); a server without tokens is paged by offset."""
        offset, seen, token = 0, 0, None
        while True:
            query = {**(params or {}), "limit": PAGE_SIZE}
            page = self.get(path, {**query, "continue": token} if token else {**query, "offset": offset})
            items = page if isinstance(page, list) else (page or {}).get("results") or []
            for item in items:
                yield item
                seen += 1
                if limit and seen >= limit:
                    return
            # A plain list is the whole answer; a page tells whether more follow.
            if isinstance(page, list) or not page.get("next") or not items:
                return
            offset, token = offset + len(items), page.get("continue")

    def list_all(self, path: str, params: Params = None, limit: int = 0) -> list[dict]:
        """`iter_list` as a list."""
        return list(self.iter_list(path, params, limit))


def _why(reason: Any) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is the server running? set SCHEDCTL_SERVER or --server)"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    if isinstance(reason, TimeoutError):
        return "timed out"
    return str(getattr(reason, "strerror", None) or reason)


def _decode(payload: bytes, status: int, reason: str) -> Any:
    if not payload.strip():
        return None
    try:
        return json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(status, "not_json", f"{reason or 'answer'}: the server did not answer with JSON "
                       "(is the server URL a schedweb server?)") from None


def _api_error(exc: error.HTTPError, locate: Locator | None, *, has_token: bool) -> ApiError:
    """The API's {"error": {code, message, fields}} envelope, or the bare HTTP status."""
    try:
        body = json.loads(exc.read() or b"null")
    except (ValueError, UnicodeDecodeError, OSError):
        body = None
    env = body.get("error") if isinstance(body, dict) else None
    if not isinstance(env, dict):
        return ApiError(exc.code, "http_error", f"{exc.reason}: not a schedweb API error answer")
    message = str(env.get("message") or exc.reason)
    if exc.code == 401 and not has_token:
        message += " (no token: set SCHEDCTL_TOKEN, token: in the config file, or --token)"
    retry = exc.headers.get("Retry-After") if exc.headers else None
    if retry and exc.code in (429, 503):
        message += f" (retry after {retry}s)"
    fields = env.get("fields") if isinstance(env.get("fields"), dict) else {}
    clean = {str(k): [str(m) for m in (v if isinstance(v, list) else [v])] for k, v in fields.items()}
    return ApiError(exc.code, str(env.get("code") or "error"), message, clean, locate)
