"""Where schedctl talks to and as whom: flags, then environment, then the config file, then defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from schedctl.errors import InputError, UsageError

DEFAULT_SERVER = "http://127.0.0.1:8000"
CONFIG_KEYS = ("server", "token")
SERVER_ENV, TOKEN_ENV, CONFIG_ENV = "SCHEDCTL_SERVER", "SCHEDCTL_TOKEN", "SCHEDCTL_CONFIG"


@dataclass(frozen=True)
class Config:
    """The resolved server URL (no trailing slash) and API token (None: send none)."""

    server: str
    token: str | None


def default_config_path(environ: Mapping[str, str], home: Path | None = None) -> tuple[Path, bool]:
    """The config file and whether it was named explicitly ($SCHEDCTL_CONFIG must then exist)."""
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV]).expanduser(), True
    return (home or Path.home()) / ".config" / "schedctl" / "config.yaml", False


def read_config_file(path: Path) -> dict[str, str]:
    """`server:` and `token:` of a YAML config file; anything else is `FILE:LINE: message` (exit 2)."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(name, 1, "not UTF-8 text") from None
    except OSError as exc:
        raise InputError(name, 1, f"cannot read: {exc.strerror or exc}") from None
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or exc
        raise InputError(name, mark.line + 1 if mark else 1, f"not valid YAML: {problem}") from None
    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")):
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise InputError(name, node.start_mark.line + 1, "expected a mapping with server: and token:")
    out: dict[str, str] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if key not in CONFIG_KEYS:
            raise InputError(name, line, f"unknown key {key!r}; expected {' or '.join(CONFIG_KEYS)}")
        if not isinstance(value_node, yaml.ScalarNode) or value_node.tag.endswith(":null"):
            raise InputError(name, value_node.start_mark.line + 1, f"{key}: expected a string")
        out[key] = str(value_node.value).strip()
    return out


def check_server(url: str, origin: str) -> str:
    """An http(s) URL without a trailing slash; anything else is a usage error naming its origin."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"{origin} must be an http:// or https:// URL, not {url!r}")
    return url.rstrip("/")


def resolve(*, server: str | None, token: str | None, environ: Mapping[str, str],
            home: Path | None = None) -> Config:
    """Flags override the environment, which overrides the config file; the server defaults to
    http://127.0.0.1:8000 (what `make run` serves), the token to none."""
    path, explicit = default_config_path(environ, home)
    file_values: dict[str, str] = {}
    if explicit or path.exists():
        file_values = read_config_file(path)
    candidates = [("--server", server), (SERVER_ENV, environ.get(SERVER_ENV)),
                  (f"server in {path}", file_values.get("server")), ("the default server", DEFAULT_SERVER)]
    origin, url = next((o, v) for o, v in candidates if v)
    key = next((v.strip() for v in (token, environ.get(TOKEN_ENV), file_values.get("token")) if v), None)
    if key and not (key.isascii() and key.isprintable() and " " not in key):
        raise UsageError("the token must be printable ASCII without spaces (it goes into an HTTP header)")
    return Config(server=check_server(url, origin), token=key or None)
