"""A crawler for the link tests: every internal link of the dashboard's pages, and the mentions of
cluster objects (queues, jobs, tasks, nodes) in their text with the link each sits in, if any."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urldefrag, urlsplit

# Text here is not prose a reader follows: scripts, form controls (a queue <select>), the tab
# title, code samples, and the figures' machine-readable <time> values.
SKIPPED = {"script", "style", "title", "option", "select", "textarea", "code", "pre", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


@dataclass
class Mention:
    """A token of a page's text and the href of the link around it (None: no link)."""

    token: str
    href: str | None
    context: str


@dataclass
class Page:
    """What one HTML page holds: its links and its text's tokens."""

    links: set[str] = field(default_factory=set)
    mentions: list[Mention] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href is not None:
            self.page.links.add(href)
        if tag not in VOID:
            self.stack.append((tag, href))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.handle_starttag(tag, attrs)
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):  # implicitly closed elements go with it
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        if any(tag in SKIPPED for tag, _ in self.stack):
            return
        href = next((h for tag, h in reversed(self.stack) if tag == "a"), None)
        for match in TOKEN.finditer(data):
            token = match.group(0).rstrip("./-")
            self.page.mentions.append(Mention(token, href, data.strip()[:80]))


def parse(html: str) -> Page:
    """The page's links (as written) and its text's tokens with their links."""
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return parser.page


def internal(href: str) -> str | None:
    """The path and query an href points to on this site, without the fragment (None: elsewhere,
    or not a page: mailto:, javascript:, a bare fragment)."""
    href, _ = urldefrag(href)
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")
