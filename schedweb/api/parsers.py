"""Request body parser for raw YAML manifests."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


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
