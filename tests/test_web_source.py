"""A web site as a source, crawled from a real HTTP server on loopback: links within a prefix,
robots.txt obeyed, unchanged pages answered 304 and not read again, edits and deletions followed,
and each bad page (slow, looping, huge) a reported failure that keeps the rest."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.ingest import corpus as corpus_module
from qrag_qdrant.ingest.sources import SourceError, SourceSpec

pytest.importorskip("protego", reason="the sources extra brings Protego")
pytest.importorskip("bs4", reason="the sources extra brings BeautifulSoup")

QUICK = {"delay": 0, "timeout": 2}


def html(title: str, text: str, *links: str) -> bytes:
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>".encode()


@dataclass
class Site:
    """What the server serves: path -> (status, content type, body, extra headers)."""

    pages: dict[str, tuple[int, str, bytes, dict[str, str]]] = field(default_factory=dict)
    #: (method's path, status sent) of every request
    hits: Counter[tuple[str, int]] = field(default_factory=Counter)
    #: a page at /slow answers only once this is set (the test's end)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def page(self, path: str, body: bytes, kind: str = "text/html", status: int = 200, **headers: str) -> None:
        self.pages[path] = (status, kind, body, headers)


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None: ...

        def do_GET(self) -> None:
            if self.path == "/docs/slow.html":
                served.release.wait()
            found = served.pages.get(self.path)
            if found is None:
                return self.answer(404, "text/plain", b"not found", {})
            status, kind, body, headers = found
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if status == 200 and self.headers.get("If-None-Match") == etag:
                return self.answer(304, kind, b"", {"ETag": etag})
            return self.answer(status, kind, body, {"ETag": etag, **headers} if status == 200 else headers)

        def answer(self, status: int, kind: str, body: bytes, headers: dict[str, str]) -> None:
            served.hits[(self.path, status)] += 1
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def rag(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(corpus_module, "RACY_SECONDS", -1.0)  # the crawl writes each page just before it is read
    with QuorumRAG(load_settings(store=tmp_path / "store"), embedder=embedder) as opened:
        yield opened


def held(rag: QuorumRAG) -> set[str]:
    return {d.source for d in rag.documents().page(0, 1000).documents}


def test_a_site_is_crawled_within_its_prefix_obeying_robots_and_synced_again_with_304s(rag, site):
    site.page("/robots.txt", b"User-agent: *\nDisallow: /docs/private/\n", "text/plain")
    site.page("/docs/", html("Home", "The support desk opens at 9:00.", "guide.html", "private/secret.html", "/blog/x"))
    site.page("/docs/guide.html", html("Guide", "Reset a password from the account page.", "faq.txt", "#top"))
    site.page("/docs/faq.txt", b"Refunds take five working days.", "text/plain")
    site.page("/docs/private/secret.html", html("Secret", "The vault code is 1234."))
    site.page("/blog/x", html("Blog", "Off the site's docs."))
    sources = rag.sources()
    sources.add(SourceSpec(name="help", kind="web", location=f"{site.url}/docs/", options=QUICK))
    first = sources.sync("help")
    assert held(rag) == {"help/docs/index.html", "help/docs/guide.html", "help/docs/faq.txt"}
    assert first.added == 3 and not first.skipped
    assert site.hits[("/docs/private/secret.html", 200)] == 0 and site.hits[("/blog/x", 200)] == 0
    guide = rag.documents().get("help/docs/guide.html")
    assert guide.url == f"{site.url}/docs/guide.html" and guide.revision is not None

    again = sources.sync("help")
    assert (again.files_read, again.unchanged, again.added, again.changed, again.removed) == (0, 3, 0, 0, 0)
    assert site.hits[("/docs/guide.html", 304)] == 1

    site.page("/docs/guide.html", html("Guide", "Reset a password by calling the desk.", "faq.txt"))
    del site.pages["/docs/faq.txt"]
    edited = sources.sync("help")
    assert (edited.changed, edited.removed, edited.files_read) == (1, 1, 1)
    assert held(rag) == {"help/docs/index.html", "help/docs/guide.html"}
    assert rag.documents().get("help/docs/guide.html").revision not in (None, guide.revision)  # the new ETag
    evidence = rag.retrieve("How do I reset a password?")
    assert "calling the desk" in evidence.clusters[0].passages[0].text


def test_a_slow_a_looping_and_a_huge_page_fail_alone_and_keep_their_last_copy(rag, site):
    site.page("/docs/", html("Home", "Start here.", "slow.html", "loop.html", "huge.html", "fine.html", "away.html"))
    site.page("/docs/away.html", b"", status=302, Location="http://169.254.169.254/latest/meta-data/")
    site.page("/docs/fine.html", html("Fine", "This page always works."))
    site.page("/docs/slow.html", html("Slow", "A page that was quick once."))
    site.page("/docs/huge.html", html("Huge", "A page that was small once."))
    sources = rag.sources()
    sources.add(
        SourceSpec(name="s", kind="web", location=f"{site.url}/docs/", options={**QUICK, "max_page_bytes": 4096})
    )
    site.release.set()  # the first sync: every page answers
    assert sources.sync("s").added == 4
    site.release.clear()  # the slow page now answers after the crawl has given up on it
    site.page("/docs/loop.html", b"", status=302, Location="/docs/loop.html")
    site.page("/docs/huge.html", b"<html>" + b"x" * 100_000 + b"</html>")
    second = sources.sync("s")
    assert set(second.skipped) == {f"{site.url}/docs/{p}" for p in ("slow.html", "loop.html", "huge.html", "away.html")}
    assert second.skipped[f"{site.url}/docs/away.html"] == "redirected to another site (http://169.254.169.254)"
    assert "within 2 s" in second.skipped[f"{site.url}/docs/slow.html"]
    assert "redirects" in second.skipped[f"{site.url}/docs/loop.html"]
    assert "over 4096 bytes" in second.skipped[f"{site.url}/docs/huge.html"]
    assert held(rag) == {"s/docs/index.html", "s/docs/fine.html", "s/docs/slow.html", "s/docs/huge.html"}
    assert second.removed == 0 and second.error is None


def test_a_sitemap_of_many_urls_is_read_up_to_the_page_budget(rag, site):
    listed = "".join(f"<url><loc>{site.url}/docs/p{n}.html</loc></url>" for n in range(20_000))
    site.page("/docs/sitemap.xml", f"<urlset>{listed}</urlset>".encode(), "application/xml")
    for n in range(5):
        site.page(f"/docs/p{n}.html", html(f"Page {n}", f"Page {n} of the manual."))
    sources = rag.sources()
    sources.add(
        SourceSpec(name="m", kind="web", location=f"{site.url}/docs/sitemap.xml", options={**QUICK, "max_pages": 3})
    )
    assert sources.sync("m").added == 3
    assert held(rag) == {f"m/docs/p{n}.html" for n in range(3)}


def test_an_unreachable_site_fails_the_sync_and_removes_nothing(rag, site):
    site.page("/docs/", html("Home", "The only page."))
    sources = rag.sources()
    sources.add(SourceSpec(name="w", kind="web", location=f"{site.url}/docs/", options=QUICK))
    sources.sync("w")
    site.release.set()
    gone = SourceSpec(name="gone", kind="web", location="http://127.0.0.1:9/docs/", options=QUICK)
    sources.add(gone)
    with pytest.raises(SourceError, match="could not be reached"):
        sources.sync("gone")
    assert held(rag) == {"w/docs/index.html"}
    with pytest.raises(SourceError, match="not an http or https URL"):
        sources.add(SourceSpec(name="bad", kind="web", location="file:///etc/passwd"))
