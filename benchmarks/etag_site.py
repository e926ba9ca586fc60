"""A web site on a loopback port for the sync benchmarks: the pages of a dict (path -> HTML), each
with an ETag, answered 304 when asked with it, as a well-behaved site does."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve_pages(
    pages: dict[str, bytes], lock: threading.Lock | None = None
) -> tuple[ThreadingHTTPServer, Counter[str]]:
    """Serve ``pages`` (read as they are at each request, under ``lock`` where it is changed
    meanwhile); the server, and how many requests were answered 200 and 304."""
    answered: Counter[str] = Counter()
    guard = lock or threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None: ...

        def do_GET(self) -> None:
            with guard:
                body = pages.get(self.path)
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            fresh = self.headers.get("If-None-Match") == etag
            answered["304" if fresh else "200"] += 1
            self.send_response(304 if fresh else 200)
            self.send_header("ETag", etag)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "0" if fresh else str(len(body)))
            self.end_headers()
            if not fresh:
                self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, answered
