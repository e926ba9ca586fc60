"""A web site: crawled from a start page (or a sitemap) within a URL prefix, its pages kept as
files in the source's own folder, so a sync ingests them as it does a folder's.

Each page is asked for with the ETag and Last-Modified it last came with, so an unchanged page
costs one request answered 304 and its file is not touched (the sync does not read it again). A
page is written again only when its bytes changed. robots.txt is obeyed (its Crawl-delay
included) through Protego, Scrapy's parser; requests are spaced by ``delay`` seconds. A page that
fails (a timeout, a server error, a redirect loop, a body over ``max_page_bytes``) is a reported
failure that keeps the page's last good copy; one the site says is gone (404, 410) leaves the
namespace, as does a page no longer linked. A site that cannot be reached at all fails the sync
and removes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from ...config.sources import SourceSpec
from ...errors import SourceError
from ...plugins import require
from ...store.files import write_atomically
from ..metadata import DocumentMetadata
from .base import Snapshot, options_of

#: the content types kept, and the suffix the loaders know each by
KEPT_TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "application/pdf": ".pdf",
}
#: the largest sitemap read (the sitemap protocol's own limit), and the sitemaps an index may name
MAX_SITEMAP_BYTES = 50 << 20
MAX_SITEMAPS = 50
SITEMAP_LOC = re.compile(rb"<loc>\s*([^<\s]+)\s*</loc>")
#: a file name's characters: anything else in a URL's path becomes "_"
UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
#: the pages' state beside their folder: URL -> its file, ETag and Last-Modified
STATE_FILE = "pages.json"


class WebOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    within: str | None = Field(
        None, description="the URL prefix every page must start with; default: the start's folder"
    )
    sitemap: bool | None = Field(None, description="the location is a sitemap; default: when its path ends in .xml")
    max_pages: int = Field(1000, ge=1, le=100_000, description="the most pages a sync keeps")
    delay: float = Field(0.5, ge=0, le=60, description="seconds between requests (more if robots.txt asks)")
    max_page_bytes: int = Field(5 << 20, ge=1024, description="a larger page is a failure, not read")
    timeout: float = Field(20.0, gt=0, le=300, description="seconds a request may take")
    user_agent: str = Field("qrag-qdrant", min_length=1, max_length=200, description="the crawler's name")


class PageFailed(Exception):
    """One page could not be fetched; the message says why."""


class WebSource:
    def __init__(self, spec: SourceSpec):
        self.options: WebOptions = options_of(spec, WebOptions)
        parts = urlsplit(spec.location)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SourceError(f"source {spec.name!r}: {spec.location!r} is not an http or https URL")
        self.start = spec.location
        #: the scheme and host (and port) every request goes to
        self.site = (parts.scheme, parts.netloc)
        self.within = self.options.within or spec.location[: spec.location.rindex("/") + 1]
        if self.options.sitemap is None:
            self.options.sitemap = parts.path.endswith(".xml")

    def snapshot(self, workdir: Path) -> Snapshot:
        require("bs4", "sources", "a web source")
        protego = require("protego", "sources", "a web source")
        pages = workdir.resolve() / "pages"
        pages.mkdir(parents=True, exist_ok=True)
        crawl = Crawl(self, pages, read_state(workdir / STATE_FILE))
        with httpx.Client(
            timeout=self.options.timeout,
            follow_redirects=True,
            max_redirects=5,
            headers={"User-Agent": self.options.user_agent},
            event_hooks={"request": [self.on_site]},
        ) as client:
            crawl.client = client
            robots = crawl.robots(protego.Protego)
            crawl.run(robots, self.sitemap_pages(crawl) if self.options.sitemap else [self.start])
        kept = {entry["file"] for entry in crawl.kept.values()}
        for path in sorted(pages.rglob("*"), reverse=True):  # pages gone, then folders left empty
            if path.is_file() and path.relative_to(pages).as_posix() not in kept:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        write_state(workdir / STATE_FILE, crawl.kept)
        metadata = {
            entry["file"]: DocumentMetadata(url=url, revision=entry.get("etag") or entry.get("modified"))
            for url, entry in crawl.kept.items()
        }
        return Snapshot(pages, metadata=metadata, failures=crawl.failures)

    def on_site(self, request: httpx.Request) -> None:
        """Every request, a redirect's included, goes to the start's own site: a page that
        redirects elsewhere (another host, an address inside the network) fails before any
        request leaves for it."""
        if (request.url.scheme, request.url.netloc.decode()) != self.site:
            raise PageFailed(f"redirected to another site ({request.url.scheme}://{request.url.host})")

    def sitemap_pages(self, crawl: Crawl) -> list[str]:
        """The pages a sitemap (or a sitemap index's sitemaps) lists, ``max_pages`` at most."""
        found: list[str] = []
        sitemaps, read = [self.start], 0
        while sitemaps and len(found) < self.options.max_pages and read < MAX_SITEMAPS:
            try:
                body = crawl.fetch_bytes(sitemaps.pop(0), MAX_SITEMAP_BYTES)
            except PageFailed as exc:
                raise SourceError(f"the sitemap could not be read: {exc}") from None
            read += 1
            index = b"<sitemapindex" in body[:2000]
            for match in SITEMAP_LOC.finditer(body):
                url = match.group(1).decode("utf-8", "replace").replace("&amp;", "&")
                (sitemaps if index else found).append(url)
                if len(found) >= self.options.max_pages:
                    break
        return found


class Crawl:
    """One sync's walk of the site."""

    def __init__(self, source: WebSource, pages: Path, known: dict[str, dict[str, Any]]):
        self.source, self.options, self.pages, self.known = source, source.options, pages, known
        self.client: httpx.Client | None = None
        #: URL -> {"file", "etag", "modified"} of every page kept this time
        self.kept: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, str] = {}
        self.delay = self.options.delay
        self._last_request = 0.0
        self._reached = False

    def robots(self, parser: Any) -> Any:
        """The site's robots.txt, parsed; none (all allowed) where the site has none."""
        url = urljoin(self.source.start, "/robots.txt")
        try:
            text = self.fetch_bytes(url, 1 << 20).decode("utf-8", "replace")
        except PageFailed:
            text = ""
        rules = parser.parse(text)
        if (asked := rules.crawl_delay(self.options.user_agent)) is not None:
            self.delay = max(self.delay, float(asked))
        return rules

    def run(self, robots: Any, start: list[str]) -> None:
        queue, seen = list(start), set()
        while queue and len(self.kept) < self.options.max_pages:
            url = urldefrag(queue.pop(0))[0]
            if url in seen or not url.startswith(self.source.within):
                continue
            seen.add(url)
            if not robots.can_fetch(url, self.options.user_agent):
                continue
            try:
                queue += self.page(url)
            except PageFailed as exc:
                self.failures[url] = str(exc)
                if (previous := self.known.get(url)) is not None and (self.pages / previous["file"]).is_file():
                    queue += self.keep(url, previous)  # its last good copy stays, and the pages it links to
        if not self._reached:
            raise SourceError(
                f"the site {self.source.start} could not be reached: {next(iter(self.failures.values()), '')}"
            )

    def keep(self, url: str, previous: dict[str, Any]) -> list[str]:
        """Keep the page's file as the last sync left it; the links it holds."""
        self.kept[url] = previous
        path = self.pages / previous["file"]
        return links(url, path.read_bytes()) if path.suffix == ".html" else []

    def page(self, url: str) -> list[str]:
        """Fetch one page into its file; the links it holds."""
        previous = self.known.get(url)
        headers = {}
        if previous is not None and (self.pages / previous["file"]).is_file():
            if previous.get("etag"):
                headers["If-None-Match"] = previous["etag"]
            if previous.get("modified"):
                headers["If-Modified-Since"] = previous["modified"]
        response, body = self.request(url, self.options.max_page_bytes, headers)
        if response.status_code == 304 and previous is not None:
            return self.keep(url, previous)
        if response.status_code in (404, 410):
            return []  # gone: its file goes
        if response.status_code >= 400:
            raise PageFailed(f"HTTP {response.status_code}")
        final = str(response.url)
        if not final.startswith(self.source.within):
            raise PageFailed(f"redirected outside {self.source.within}")
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in KEPT_TYPES:
            return []  # not a document (an image, a script): not kept
        name = self.file_for(url, KEPT_TYPES[kind])
        path = self.pages / name
        if not path.is_file() or path.read_bytes() != body:  # the same bytes keep the file's time
            path.parent.mkdir(parents=True, exist_ok=True)
            written = path.with_name(path.name + ".part")
            written.write_bytes(body)
            written.replace(path)
        self.kept[url] = {
            "file": name,
            "etag": response.headers.get("etag"),
            "modified": response.headers.get("last-modified"),
        }
        return links(final, body) if KEPT_TYPES[kind] == ".html" else []

    def file_for(self, url: str, suffix: str) -> str:
        """The page's file under the pages' folder: its URL's path, made safe, never outside it."""
        parts = urlsplit(url)
        path = unquote(parts.path).lstrip("/")
        if not path or path.endswith("/"):
            path += "index"
        segments = [UNSAFE.sub("_", segment)[:100] or "_" for segment in path.split("/")]
        segments = ["_" if segment in (".", "..") else segment for segment in segments]
        if parts.query:
            segments[-1] += "-" + hashlib.sha256(parts.query.encode()).hexdigest()[:10]
        if not segments[-1].endswith(suffix):
            segments[-1] += suffix
        name = "/".join(segments)
        taken = {entry["file"] for other, entry in self.kept.items() if other != url}
        if name in taken:  # two URLs, one name ("/a" and "/a.html")
            name = name[: -len(suffix)] + "-" + hashlib.sha256(url.encode()).hexdigest()[:10] + suffix
        return name

    def fetch_bytes(self, url: str, limit: int) -> bytes:
        response, body = self.request(url, limit, {})
        if response.status_code >= 400:
            raise PageFailed(f"HTTP {response.status_code}")
        return body

    def request(self, url: str, limit: int, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
        """One GET, spaced from the last by the delay, its body cut off past ``limit`` bytes."""
        assert self.client is not None
        wait = self._last_request + self.delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_request = time.monotonic()
        try:
            with self.client.stream("GET", url, headers=headers) as response:
                self._reached = True
                declared = int(response.headers.get("content-length") or 0)
                if declared > limit:
                    raise PageFailed(f"over {limit} bytes ({declared})")
                body = b"".join(limited(response.iter_bytes(), limit))
                return response, body
        except httpx.TooManyRedirects:
            self._reached = True
            raise PageFailed("too many redirects") from None
        except httpx.TimeoutException:
            raise PageFailed(f"no answer within {self.options.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise PageFailed(f"{exc.__class__.__name__}: {exc}") from None


def limited(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise PageFailed(f"over {limit} bytes")
        yield chunk


def links(base: str, body: bytes) -> list[str]:
    """The http(s) links of an HTML page, resolved against its URL, without fragments."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "html.parser")
    found = []
    for anchor in soup.find_all("a", href=True):
        url = urldefrag(urljoin(base, str(anchor["href"])))[0]
        if url.startswith(("http://", "https://")):
            found.append(url)
    return found


def read_state(path: Path) -> dict[str, dict[str, Any]]:
    try:
        raw = json.loads(path.read_text())
        return {
            url: entry for url, entry in raw.items() if isinstance(entry, dict) and isinstance(entry.get("file"), str)
        }
    except (OSError, ValueError, AttributeError):
        return {}


def write_state(path: Path, kept: dict[str, dict[str, Any]]) -> None:
    write_atomically(path, json.dumps(kept))
