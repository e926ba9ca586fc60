"""The shared service under hostile input: memory, 500s, leftovers and key revocation.

    python benchmarks/service_abuse.py --requests 1000 --clients 8 --json-out abuse.json

One ``qrag-qdrant serve`` on a loopback port over a small store this script builds, then:
1. an unauthenticated 100 MB body sent chunked (no Content-Length) over a raw socket: the
   status, the bytes the client got to send before the answer, and the server's peak RSS
   (VmHWM) before and after;
2. the same with a valid key (the body limit, not the key, stops it);
3. ``--requests`` of mixed bad input from ``--clients`` threads: statuses by count (a 500 is a
   failure), RSS before and after, and the files left under ``<store>/.uploads``;
4. a key revoked while the service runs: seconds from ``key revoke`` to its first 401.
Every request goes to 127.0.0.1 only; every loop is bounded.
"""

from __future__ import annotations

import argparse
import json
import random
import select
import socket
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from service_latency import serving  # this folder's

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.service.auth.keys import KeyFile

MB = 1 << 20
DOCS = {
    "bees.txt": "Honeybee foragers perform the waggle dance to show their sisters where flowers are. " * 20,
    "owls.txt": "Barn owls hunt at night and find mice in total darkness by sound alone. " * 20,
}


def memory_kb(pid: int) -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {name: int(fields[name].split()[0]) for name in ("VmRSS", "VmHWM")}


def chunked_body(port: int, key: str | None, total: int) -> dict[str, object]:
    """POST /v1/query with a chunked body of ``total`` bytes; stops sending when the server answers."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        head = [
            "POST /v1/query HTTP/1.1",
            "Host: 127.0.0.1",
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
        ] + ([f"Authorization: Bearer {key}"] if key else [])
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
        while sent < total and not select.select([sock], [], [], 0)[0]:  # until the server answers
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += 0x10000
        reply = b""
        while b"\r\n" not in reply:
            more = sock.recv(4096)
            if not more:
                break
            reply += more
    return {"status": int(reply.split()[1]) if reply else None, "bytes_sent_before_answer": sent}


def bad_requests(base: str, keys: dict[str, str], count: int, clients: int) -> Counter[str]:
    big = "word " * 300_000
    boundary = "b0undary"
    upload = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="bad\x00name.txt"\r\n'
        f"Content-Type: text/plain\r\n\r\ntext\r\n--{boundary}--\r\n"
    ).encode()
    kinds = [
        ("no key", lambda h: h.post("/v1/query", json={"question": "bees?"})),
        (
            "unknown key",
            lambda h: h.post("/v1/query", json={"question": "bees?"}, headers={"Authorization": "Bearer x"}),
        ),
        ("malformed json", lambda h: h.post("/v1/query", content=b'{"question": ', headers=keys | json_type())),
        (
            "lone surrogate",
            lambda h: h.post("/v1/query", content=b'{"question": "\\ud800 bees"}', headers=keys | json_type()),
        ),
        ("not utf-8", lambda h: h.post("/v1/query", content=b'{"question": "\xff\xfe"}', headers=keys | json_type())),
        (
            "huge question",
            lambda h: h.post("/v1/query", content=json.dumps({"question": big}).encode(), headers=keys | json_type()),
        ),
        ("empty question", lambda h: h.post("/v1/query", json={"question": "  "}, headers=keys)),
        (
            "bad upload name",
            lambda h: h.post(
                "/v1/ingest",
                content=upload,
                headers=keys | {"Content-Type": f"multipart/form-data; boundary={boundary}"},
            ),
        ),
        (
            "unknown query id",
            lambda h: h.post("/v1/feedback", json={"query_id": "0" * 32, "rating": "up"}, headers=keys),
        ),
        ("unknown job", lambda h: h.get("/v1/jobs/../../etc/passwd", headers=keys)),
        ("wrong method", lambda h: h.delete("/v1/query", headers=keys)),
    ]
    picks = [random.Random(n).choice(kinds) for n in range(count)]
    shares = [picks[i::clients] for i in range(clients)]

    def client(share: list) -> Counter[str]:
        seen: Counter[str] = Counter()
        with httpx.Client(base_url=base, timeout=120) as http:
            for name, send in share:
                seen[f"{name}: {send(http).status_code}"] += 1
        return seen

    with ThreadPoolExecutor(clients) as pool:
        return sum(pool.map(client, shares), Counter())


def json_type() -> dict[str, str]:
    return {"Content-Type": "application/json"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "corpus").mkdir()
        for name, text in DOCS.items():
            (root / "corpus" / name).write_text(text)
        with QuorumRAG(load_settings(store=root / "store", namespace="team-a")) as rag:
            rag.ingest(root / "corpus")
        key_file = KeyFile(root / "keys.toml")
        key = key_file.add("team-a", "read-write", name="bench")
        env = {
            "QRAG_STORE": str(root / "store"),
            "QRAG_SERVICE_KEYS": str(root / "keys.toml"),
            "QRAG_SERVICE_RATE_QUERY": "100000/second",
            "QRAG_SERVICE_RATE_INGEST": "100000/second",
            "QRAG_SERVICE_RATE_FEEDBACK": "100000/second",
            "PATH": "/usr/bin:/bin",
        }
        result: dict[str, object] = {}
        with serving(env) as (base, server):
            port = int(base.rsplit(":", 1)[1])
            before = memory_kb(server.pid)
            result["chunked_100mb_no_key"] = {
                **chunked_body(port, None, 100 * MB),
                "memory_kb_before": before,
                "memory_kb_after": memory_kb(server.pid),
            }
            result["chunked_100mb_with_key"] = {
                **chunked_body(port, key, 100 * MB),
                "memory_kb_after": memory_kb(server.pid),
            }
            before = memory_kb(server.pid)
            statuses = bad_requests(base, {"Authorization": f"Bearer {key}"}, args.requests, args.clients)
            result["bad_input"] = {
                "requests": args.requests,
                "clients": args.clients,
                "statuses": dict(sorted(statuses.items())),
                "responses_500": sum(n for s, n in statuses.items() if s.endswith(": 500")),
                "memory_kb_before": before,
                "memory_kb_after": memory_kb(server.pid),
                "files_left_in_uploads": sum(1 for p in (root / "store" / ".uploads").rglob("*") if p.is_file()),
            }
            revoked = key_file.add("team-a", "read", name="leaving")
            auth = {"Authorization": f"Bearer {revoked}"}
            assert httpx.get(f"{base}/v1/collections", headers=auth).status_code == 200
            started = time.perf_counter()
            key_file.revoke("leaving")
            refused = [httpx.get(f"{base}/v1/collections", headers=auth).status_code for _ in range(3)]
            result["revoked_key"] = {
                "statuses_after_revoke": refused,
                "seconds_to_first_401": round(time.perf_counter() - started, 3),
            }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
