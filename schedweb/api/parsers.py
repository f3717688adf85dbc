"""Request body parsers: JSON with a bounded nesting depth, and raw YAML manifests as text."""

from __future__ import annotations

import json
import re

import numpy as np
from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

# A JSON string (escapes included): brackets inside strings do not nest.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


def max_json_depth() -> int:
    """settings.MAX_JSON_DEPTH (default 64): deepest nesting a JSON body may have."""
    return int(getattr(settings, "MAX_JSON_DEPTH", 64))


def json_depth(raw: bytes) -> int:
    """Deepest bracket nesting of a JSON text, strings skipped (C regex + numpy: ~10 MiB/0.1 s)."""
    arr = np.frombuffer(_JSON_STRING.sub(b"", raw), dtype=np.uint8)
    if arr.size == 0:
        return 0
    step = np.isin(arr, _OPEN).astype(np.int32) - np.isin(arr, _CLOSE).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, refusing bodies nested deeper than MAX_JSON_DEPTH before decoding them
    (json.loads recurses: 100,000 nested objects would be a RecursionError, i.e. a 500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        """The decoded body; ParseError (400) when too deep or not JSON."""
        raw = stream.read() if stream is not None else b""
        limit = max_json_depth()
        if json_depth(raw) > limit:
            raise ParseError(f"JSON parse error - nested deeper than {limit} levels (MAX_JSON_DEPTH).")
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return json.loads(raw.decode(encoding), parse_constant=_refuse_constant)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"JSON parse error - {str(exc)[:200]}") from None


def _refuse_constant(name: str) -> float:
    # NaN and Infinity are not JSON (Python's decoder accepts them by default).
    raise ValueError(f"{name} is not valid JSON")


class YamlTextParser(BaseParser):
    """Hands a YAML (or plain text) body to the view as a str; the view parses the documents."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None) -> str:
        """The body as text (UTF-8 unless the request says otherwise)."""
        try:
            return stream.read().decode((parser_context or {}).get("encoding") or "utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"Body is not valid UTF-8: {exc}") from exc


class YamlTextParserAlias(YamlTextParser):
    """The same parser under the other YAML media types (DRF matches one media type per class)."""

    media_type = "application/x-yaml"


class YamlTextParserText(YamlTextParser):
    """The same parser for text/yaml."""

    media_type = "text/yaml"


class ConfigYamlParser(YamlTextParser):
    """A Volcano scheduler configuration sent as YAML (the scheduler-config dry-run): the body
    becomes {"yaml": text}, the shape of the JSON form. The text is composed once within the YAML
    budget (MAX_YAML_DEPTH, MAX_YAML_NODES: schedweb.core.yaml_budget), so an alias bomb or a
    deep nest is a 400 before anything reads it; syntax errors are the configuration's own
    (parse_conf names them as a `yaml` field error)."""

    def parse(self, stream, media_type=None, parser_context=None) -> dict[str, str]:
        """{"yaml": the body}; ParseError (400) when over budget or not UTF-8."""
        import yaml

        from schedweb.core.yaml_budget import BudgetLoader, YamlBudgetError

        text = super().parse(stream, media_type, parser_context)
        try:
            for _ in yaml.compose_all(text, Loader=BudgetLoader):  # noqa: S506 - safe loader subclass
                pass
        except YamlBudgetError as exc:
            raise ParseError(f"YAML too large: {exc}") from None
        except yaml.YAMLError:
            pass
        return {"yaml": text}


class ConfigYamlParserAlias(ConfigYamlParser):
    """The same parser for application/x-yaml."""

    media_type = "application/x-yaml"


class ConfigYamlParserText(ConfigYamlParser):
    """The same parser for text/yaml."""

    media_type = "text/yaml"


CONFIG_YAML_PARSERS = (ConfigYamlParser, ConfigYamlParserAlias, ConfigYamlParserText)
