"""Connections that never finish their headers, against a running ``qrag-qdrant serve``: how many
are still open when the header timeout has passed, and whether a whole request is served meanwhile.

    qrag-qdrant serve --port 8000 &
    python benchmarks/slow_headers.py --url http://127.0.0.1:8000 --connections 500
"""

from __future__ import annotations

import argparse
import json
import selectors
import socket
import time
import urllib.request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--patience", type=float, default=120, help="seconds to wait for the server to close them")
    args = parser.parse_args()
    host, port = args.url.removeprefix("http://").split(":")
    started = time.perf_counter()
    stalled = [socket.create_connection((host, int(port))) for _ in range(args.connections)]
    for connection in stalled:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # no blank line: the headers never end
    with urllib.request.urlopen(f"{args.url}/healthz", timeout=30) as reply:
        served = reply.status
    selector = selectors.DefaultSelector()
    for connection in stalled:
        selector.register(connection, selectors.EVENT_READ)
    open_count, closed_at = len(stalled), []
    while open_count and time.perf_counter() - started < args.patience:
        for key, _ in selector.select(timeout=1):
            if key.fileobj.recv(1) == b"":  # type: ignore[union-attr]
                selector.unregister(key.fileobj)
                key.fileobj.close()  # type: ignore[union-attr]
                open_count -= 1
                closed_at.append(time.perf_counter() - started)
    print(
        json.dumps(
            {
                "connections": len(stalled),
                "still_open_after_patience": open_count,
                "all_closed_after_s": round(max(closed_at), 2) if closed_at and not open_count else None,
                "first_closed_after_s": round(min(closed_at), 2) if closed_at else None,
                "healthz_while_stalled": served,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
