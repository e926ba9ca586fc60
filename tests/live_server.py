"""The service on a real loopback port, in a thread, for clients that need a socket (a browser, the
mcp SDK's HTTP transport, the openai SDK as a team would run it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .service_helpers import free_port
from .waiting import wait_until


@contextmanager
def live_server(app, patience_s: float = 180, port: int | None = None, **options) -> Iterator[str]:
    """The base URL of ``app`` served by uvicorn until the block ends (on ``port``, or a free
    one); ``options``: uvicorn's, as ``serve`` passes them (``service.server.server_options``)."""
    import uvicorn

    config = {"log_level": "warning", **options, "host": "127.0.0.1", "port": port or free_port()}
    server = uvicorn.Server(uvicorn.Config(app, **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started or not thread.is_alive(), "the service listens")  # set once it listens
    assert server.started, "the service did not start"
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(patience_s)
