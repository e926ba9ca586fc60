"""HTML through BeautifulSoup with Python's own parser (no compiled dependency).

Main-content rule: the first ``<main>``, else the first ``<article>``, else ``<body>``; inside
it, scripts, styles, navigation, headers, footers, asides and forms are dropped. Headings
``h1``–``h6`` make the heading path each later block carries. The metadata is the head's:
``<title>`` or Open Graph's ``og:title``, ``og:site_name``, ``author``, ``article:published_time``
and the canonical URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import LoaderError, TextBlock, require

DROPPED = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "template", "svg")
HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
BLOCKS = ("p", "li", "pre", "blockquote", "td", "th", "dd", "dt", "figcaption", "caption")


#: the <meta> properties or names each metadata field is read from, the first present winning
META = {
    "title": ("og:title",),
    "publisher": ("og:site_name", "publisher"),
    "author": ("author", "article:author"),
    "published_at": ("article:published_time", "date", "pubdate"),
    "url": ("og:url",),
}


class HtmlLoader:
    suffixes = (".html", ".htm")

    def sniff(self, head: bytes) -> bool:
        start = head.lstrip()[:256].lower()
        return start.startswith(b"<!doctype html") or start.startswith(b"<html")

    def metadata(self, path: Path) -> dict[str, Any]:
        bs4 = require("bs4", "html")
        head = bs4.BeautifulSoup(
            path.read_bytes(), "html.parser", parse_only=bs4.SoupStrainer(["title", "meta", "link"])
        )
        found: dict[str, Any] = {}
        for tag in head.find_all("meta"):
            key, content = tag.get("property") or tag.get("name"), tag.get("content")
            for field, keys in META.items():
                if isinstance(key, str) and key.lower() in keys and isinstance(content, str) and field not in found:
                    found[field] = content
        title = head.find("title")
        if "title" not in found and title is not None and title.get_text(strip=True):
            found["title"] = title.get_text(" ", strip=True)
        canonical = head.find("link", rel="canonical")
        if "url" not in found and canonical is not None and isinstance(canonical.get("href"), str):
            found["url"] = canonical["href"]
        return found

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        bs4 = require("bs4", "html")
        soup = bs4.BeautifulSoup(path.read_bytes(), "html.parser")
        root = soup.find("main") or soup.find("article") or soup.body or soup
        for tag in root.find_all(DROPPED):
            tag.decompose()
        path_so_far: list[tuple[int, str]] = []
        found = False
        for element in root.find_all((*HEADINGS, *BLOCKS)):
            if element.find_parent(BLOCKS):
                continue  # its text is part of the enclosing block
            text = " ".join(element.get_text(" ").split())
            if not text:
                continue
            if element.name in HEADINGS:
                level = int(element.name[1])
                path_so_far = [(lvl, title) for lvl, title in path_so_far if lvl < level] + [(level, text)]
            found = True
            yield TextBlock(text, headings=tuple(title for _, title in path_so_far))
        if not found:
            text = " ".join(root.get_text(" ").split())
            if not text:
                raise LoaderError("no readable text in the HTML body")
            yield TextBlock(text)
