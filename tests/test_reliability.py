"""Faults and bad input: real subprocesses killed mid-ingest, concurrent teams, servers that
fail, files that cannot be read. Each case asserts the behaviour, not just the absence of a crash."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import QdrantSettings, load_settings
from qrag_qdrant.errors import StoreError
from qrag_qdrant.ingest.sources import SourceSpec
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.store.server import ServerStore

from .cli_helpers import assert_clean_error, namespace_held_elsewhere, run
from .sample_corpus import DOCUMENTS

CLI = [sys.executable, "-c", "from qrag_qdrant.cli.app import main; main()"]


def snapshot(store: Path, namespace: str = "default") -> dict[str, list[tuple]]:
    """Every point of every collection of a namespace: (id, source, chunk, hash)."""
    with EdgeStore(store, namespace) as edge:
        return {
            name: sorted(
                (p["source"], p["chunk_index"], p["doc_hash"])
                for p in edge.scroll_payloads(name, ["source", "chunk_index", "doc_hash"])
            )
            for name in edge.list_collections(namespace)
        }


@pytest.fixture
def big_corpus(tmp_path: Path) -> Path:
    """The sample corpus eight times over, so an ingest lasts long enough to be interrupted."""
    root = tmp_path / "big"
    for copy in range(8):
        for name, text in DOCUMENTS.items():
            path = root / f"copy{copy}" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return root


@pytest.fixture
def clean(tmp_path: Path, big_corpus: Path, embedder) -> dict[str, list[tuple]]:
    store = tmp_path / "clean"
    with QuorumRAG(load_settings(store=store), store=EdgeStore(store), embedder=embedder) as rag:
        rag.ingest(big_corpus)
    return snapshot(store)


def start_ingest(*args: str) -> subprocess.Popen:
    """An ingest in another process whose progress lines (stderr is a pipe) can be waited for."""
    return subprocess.Popen([*CLI, "ingest", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_batches(process: subprocess.Popen, batches: int) -> bool:
    """Read the ingest's progress until ``batches`` batches were embedded; False if it ended first.
    The observable event, not a clock: on a busy machine a fixed sleep can end before any write."""
    seen = 0
    while seen < batches:
        line = process.stderr.readline()
        if not line:
            return False
        seen += "chunks embedded" in line
    return True


@pytest.mark.slow
def test_sigkill_at_random_points_then_rerun_equals_a_clean_ingest(tmp_path, big_corpus, clean):
    store = tmp_path / "killed"
    rng = random.Random(5)
    for _ in range(3):
        process = start_ingest(str(big_corpus), "--store", str(store))
        wait_for_batches(process, rng.randint(1, 3))
        process.send_signal(signal.SIGKILL)
        process.wait()
    finished = subprocess.run(
        [*CLI, "ingest", str(big_corpus), "--store", str(store), "--json"], capture_output=True, text=True
    )
    assert finished.returncode == 0, finished.stderr
    assert snapshot(store) == clean  # same points, same count, no duplicates, no orphans


@pytest.mark.slow
def test_a_sync_killed_at_random_points_then_run_again_equals_one_clean_sync(tmp_path, big_corpus, embedder):
    """A source's sync is an ingest with a scoped prune: killed mid-way, the next one finishes it,
    with the documents an uninterrupted sync gives, and no duplicate, orphan or lost record."""
    with QuorumRAG(load_settings(store=tmp_path / "clean"), embedder=embedder) as rag:
        rag.sources().add(SourceSpec(name="big", kind="folder", location=str(big_corpus)))
        rag.sources().sync("big")
    store = tmp_path / "killed"
    added = run("sources", "add", "big", "folder", str(big_corpus), "--no-sync", "--store", str(store))
    assert added.exit_code == 0, added.stderr
    rng = random.Random(7)
    for _ in range(3):
        process = subprocess.Popen(
            [*CLI, "sources", "sync", "--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        wait_for_batches(process, rng.randint(1, 3))
        process.send_signal(signal.SIGKILL)
        process.wait()
    finished = subprocess.run(
        [*CLI, "sources", "sync", "--store", str(store), "--json"], capture_output=True, text=True
    )
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["big"]["error"] is None
    assert snapshot(store) == snapshot(tmp_path / "clean")
    assert all(source.startswith("big/") for points in snapshot(store).values() for source, _, _ in points)


@pytest.mark.slow
def test_sigkill_during_a_rebuild_keeps_the_old_index_and_the_next_run_cleans_up(tmp_path, big_corpus, clean, embedder):
    store = tmp_path / "rebuilt"
    with QuorumRAG(load_settings(store=store), store=EdgeStore(store), embedder=embedder) as rag:
        rag.ingest(big_corpus)
    process = start_ingest(str(big_corpus), "--store", str(store), "--rebuild")
    wait_for_batches(process, 2)  # the new collections exist and are being filled
    process.send_signal(signal.SIGKILL)
    if process.wait() == 0:
        pytest.skip("the rebuild finished before the kill arrived")

    aliases = json.loads((store / ".aliases-default.json").read_text())
    assert sorted(aliases.values()) == sorted(f"{alias}-v1" for alias in clean)
    assert snapshot(store) == clean  # readers still see the old, complete index
    half_built = {f"{alias}-v2" for alias in clean}
    assert half_built <= {p.name for p in store.iterdir()}

    finished = subprocess.run(
        [*CLI, "ingest", str(big_corpus), "--store", str(store), "--json"], capture_output=True, text=True
    )
    assert finished.returncode == 0, finished.stderr
    assert set(json.loads(finished.stdout)["dropped"]) == half_built
    assert not half_built & {p.name for p in store.iterdir()}
    assert snapshot(store) == clean


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_a_rerun_resumes(tmp_path, big_corpus, clean):
    store = tmp_path / "interrupted"
    process = start_ingest(str(big_corpus), "--store", str(store))
    # the first batch's write was handed to the writer before the second batch was embedded
    wait_for_batches(process, 2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    if process.returncode == 0:
        pytest.skip("the ingest finished before the interrupt arrived")
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    resumed = subprocess.run(
        [*CLI, "ingest", str(big_corpus), "--store", str(store), "--json"], capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    total_chunks = sum(len(points) for points in clean.values())
    assert report["embedded_chunks"] < total_chunks  # what was stored before the interrupt is not redone
    assert snapshot(store) == clean


@pytest.mark.slow
def test_two_namespaces_ingest_into_one_store_at_the_same_time(tmp_path, corpus):
    store = tmp_path / "shared"
    processes = [
        subprocess.Popen(
            [*CLI, "ingest", str(corpus), "--store", str(store), "--namespace", team],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for team in ("team-a", "team-b")
    ]
    for process in processes:
        assert process.wait(timeout=120) == 0, process.stderr.read()
    a, b = snapshot(store, "team-a"), snapshot(store, "team-b")
    assert sorted(a) == ["team-a-c100-o50", "team-a-c50-o25"]
    assert list(a.values()) == [b[name.replace("team-a", "team-b")] for name in a]


@pytest.mark.slow
def test_a_second_process_on_the_same_namespace_fails_fast(tmp_path, corpus):
    store = tmp_path / "held"
    with namespace_held_elsewhere(store, "team-a"):
        # refused, not waited for: a blocking lock would let this ingest succeed once the holder ends
        blocked = run("ingest", str(corpus), "--store", str(store), "--namespace", "team-a")
        assert_clean_error(blocked, 1, "store is in use by another process: namespace 'team-a'")
        query = run("query", "How do bees dance?", "--store", str(store), "--namespace", "team-a")
        assert_clean_error(query, 1, "store is in use by another process")  # never a half-written view
        assert run("ingest", str(corpus), "--store", str(store), "--namespace", "team-b").exit_code == 0
    assert "team-a-c50-o25" not in os.listdir(store)  # the refused ingest wrote nothing


@pytest.mark.slow
def test_full_disk_is_one_line_and_the_rerun_completes(tmp_path, corpus, monkeypatch, embedder):
    store = tmp_path / "store"
    calls = {"n": 0}
    real_upsert = EdgeStore.upsert

    def upsert_until_full(self, name, points):
        calls["n"] += 1
        if calls["n"] > 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(store))
        return real_upsert(self, name, points)

    monkeypatch.setattr(EdgeStore, "upsert", upsert_until_full)
    assert_clean_error(run("ingest", str(corpus), "--store", str(store)), 1, "No space left on device")
    monkeypatch.setattr(EdgeStore, "upsert", real_upsert)
    assert run("ingest", str(corpus), "--store", str(store)).exit_code == 0
    reference = tmp_path / "reference"
    with QuorumRAG(load_settings(store=reference), store=EdgeStore(reference), embedder=embedder) as rag:
        rag.ingest(corpus)
    assert snapshot(store) == snapshot(reference)


@pytest.mark.parametrize(
    ("name", "content", "outcome"),
    [
        ("crlf.txt", b"Windows line endings\r\nstill split into words\r\n", "ingested"),
        ("zero.txt", b"", "empty"),
        ("one-word.md", b"Lighthouse", "ingested"),
    ],
)
@pytest.mark.slow
def test_odd_but_valid_files(corpus, name, content, outcome):
    (corpus / name).write_bytes(content)
    report = json.loads(run("ingest", str(corpus), "--json").stdout)
    skipped = {s["source"]: s["reason"] for s in report["skipped"]}
    if outcome == "ingested":
        assert name not in skipped and report["documents"] == len(DOCUMENTS) + 1
    else:
        assert skipped == {name: outcome}


def test_symlink_loops_do_not_hang(corpus):
    (corpus / "loop").symlink_to(corpus, target_is_directory=True)
    (corpus / "food" / "back").symlink_to(corpus / "food", target_is_directory=True)
    result = run("ingest", str(corpus), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["documents"] == len(DOCUMENTS)


def unreadable(monkeypatch, name: str) -> None:
    """The file ``name`` refuses to be opened, as a file without read permission does."""
    real_open = Path.open

    def open_file(path: Path, *args, **kwargs):
        if path.name == name:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_file)


def test_unreadable_files_are_skipped_and_listed(corpus, monkeypatch):
    unreadable(monkeypatch, "lighthouses.txt")
    report = json.loads(run("ingest", str(corpus), "--json").stdout)
    assert report["skipped"] == [{"source": "lighthouses.txt", "reason": "unreadable: Permission denied"}]
    assert report["documents"] == len(DOCUMENTS) - 1


def test_a_file_unreadable_for_now_keeps_the_version_an_earlier_ingest_gave(corpus, monkeypatch):
    assert run("ingest", str(corpus)).exit_code == 0
    unreadable(monkeypatch, "lighthouses.txt")
    report = json.loads(run("ingest", str(corpus), "--json").stdout)
    assert report["skipped"] == [{"source": "lighthouses.txt", "reason": "unreadable: Permission denied"}]
    assert report["pruned_sources"] == 0
    listed = json.loads(run("documents", "list", "--json").stdout)
    assert "lighthouses.txt" in {document["source"] for document in listed["documents"]}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_files_for_real(corpus):
    (corpus / "lighthouses.txt").chmod(0)
    report = json.loads(run("ingest", str(corpus), "--json").stdout)
    assert report["skipped"] == [{"source": "lighthouses.txt", "reason": "unreadable: Permission denied"}]


def test_unknown_embedding_model(corpus):
    result = run("ingest", str(corpus), env={"QRAG_EMBEDDING_MODEL": "acme/no-such-model"})
    assert_clean_error(result, 1, "unknown embedding model 'acme/no-such-model'")
    assert not Path(".qrag").exists() or not list(Path(".qrag").glob("default-*"))


@pytest.mark.slow
def test_a_namespace_built_by_another_model_is_refused_before_loading_anything(corpus):
    assert run("ingest", str(corpus)).exit_code == 0
    result = run("query", "How do bees dance?", env={"QRAG_EMBEDDING_MODEL": "BAAI/bge-small-en-v1.5"})
    assert_clean_error(result, 1, "was built with model 'sentence-transformers/all-MiniLM-L6-v2'")


@pytest.mark.slow
def test_a_100_kb_question_is_refused_clearly(corpus):
    assert run("ingest", str(corpus)).exit_code == 0
    assert_clean_error(run("query", "why?" * 25_000), 1, "100000 characters long", "max_question_chars")


def hung_server() -> tuple[socket.socket, list[int]]:
    """A TCP server on loopback that accepts and never answers: a hung Qdrant."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[int] = []

    def accept() -> None:
        connections = []
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            connections.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


@pytest.mark.slow
def test_a_hung_qdrant_times_out_after_bounded_retries():
    server, accepted = hung_server()
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    store = ServerStore(
        QdrantClient(url=url, timeout=1), location=url, settings=QdrantSettings(retries=2, backoff=0.05)
    )
    with pytest.raises(StoreError, match=r"cannot reach Qdrant at http://127.0.0.1:\d+ after 3 attempts"):
        store.collection_names()
    assert len(accepted) >= 3  # each attempt reached the server and timed out: bounded by count, not a clock
    server.close()


def test_an_unreachable_qdrant_is_one_line_from_the_cli():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run("collections", env={"QRAG_QDRANT_URL": f"http://127.0.0.1:{port}", "QRAG_QDRANT_BACKOFF": "0.01"})
    assert_clean_error(result, 1, f"cannot reach Qdrant at http://127.0.0.1:{port} after 4 attempts")


def test_a_wrong_api_key_is_named_as_an_auth_problem_without_the_key():
    requests: list[str] = []

    class Refuse(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            requests.append(self.headers.get("api-key", ""))
            body = b'{"status": {"error": "Unauthorized"}}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        result = run("collections", env={"QRAG_QDRANT_URL": url, "QRAG_QDRANT_API_KEY": "sup3r-s3cret-key"})
    finally:
        server.shutdown()
        server.server_close()
    assert_clean_error(result, 1, "refused the API key or token (HTTP 401)", "QRAG_QDRANT_API_KEY")
    assert "sup3r-s3cret-key" not in result.stdout + result.stderr
    assert requests == ["sup3r-s3cret-key"]  # sent once: an auth error is an answer, not retried


MEMORY_PROBE = '''
import sys, threading, time
import numpy as np
from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.store.edge import EdgeStore

class HashEmbedder:
    """A fast stand-in for the dense model: this probe measures memory, not vectors."""
    model_name, dim = "sentence-transformers/all-MiniLM-L6-v2", 384
    def embed(self, texts):
        rows = np.random.default_rng(len(texts)).standard_normal((len(texts), self.dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

def anonymous_mb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024

base, peak, done = anonymous_mb(), [0], []
def watch():
    while not done:
        peak[0] = max(peak[0], anonymous_mb())
        time.sleep(0.02)
threading.Thread(target=watch, daemon=True).start()
settings = load_settings(store=sys.argv[2], retrievers=[{"kind": "dense", "size": 2000, "overlap": 1000}],
                         retrieval={"quorum": 1})
with QuorumRAG(settings, store=EdgeStore(sys.argv[2]), embedder=HashEmbedder()) as rag:
    report = rag.ingest(sys.argv[1])
done.append(1)
print(report.documents, sum(report.chunks.values()), peak[0] - base)
'''


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc for RssAnon")
@pytest.mark.slow
def test_a_50_mb_file_streams_without_blowing_memory(tmp_path):
    corpus = tmp_path / "huge"
    corpus.mkdir()
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(50_000)]
    with (corpus / "huge.txt").open("w") as file:
        while file.tell() < 50 * 1024 * 1024:
            file.write(" ".join(rng.choices(vocabulary, k=200)) + "\n")
    probe = tmp_path / "probe.py"
    probe.write_text(MEMORY_PROBE)
    result = subprocess.run(
        [sys.executable, str(probe), str(corpus), str(tmp_path / "store")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    documents, chunks, growth_mb = map(int, result.stdout.split())
    assert documents == 1 and chunks > 7000
    # holding the file, its chunks and their points at once took 2.2 GB here; streaming takes ~0.6 GB,
    # most of it Qdrant's own indexes of what was written
    assert growth_mb < 1024


class RecordingShard:
    """An Edge shard whose flushes and closes are written down."""

    def __init__(self, shard, calls: list[str]):
        self._shard, self._calls = shard, calls

    def __getattr__(self, name: str):
        attribute = getattr(self._shard, name)
        if name not in ("flush", "close"):
            return attribute

        def recorded(*args):
            self._calls.append(name)
            return attribute(*args)

        return recorded


def test_closing_flushes_only_the_collections_this_process_wrote(tmp_path, corpus, embedder):
    store = tmp_path / "store"
    with QuorumRAG(load_settings(store=store), store=EdgeStore(store), embedder=embedder) as rag:
        rag.ingest(corpus)
    before = snapshot(store)
    edge = EdgeStore(store)
    with QuorumRAG(load_settings(store=store), store=edge, embedder=embedder) as rag:
        assert not rag.retrieve("How do bees dance?").abstained
        calls: dict[str, list[str]] = {name: [] for name in edge._shards}
        edge._shards = {name: RecordingShard(shard, calls[name]) for name, shard in edge._shards.items()}
    assert len(calls) == 2 and all(made == ["close"] for made in calls.values())

    (corpus / "extra.md").write_text("Hummingbirds hover by beating their wings in a figure of eight.")
    with QuorumRAG(load_settings(store=store), store=EdgeStore(store), embedder=embedder) as rag:
        rag.retrieve("How do bees dance?")  # every shard opened before it is written
        rag.ingest(corpus)
    after = snapshot(store)
    assert all(len(after[name]) > len(before[name]) for name in before)  # the new file's chunks were kept


def test_a_read_only_store_is_a_clear_error_and_stays_unchanged(tmp_path, corpus):
    store = tmp_path / "store"
    assert run("ingest", str(corpus), "--store", str(store)).exit_code == 0
    before = snapshot(store)
    files_before = sorted((p.relative_to(store), p.stat().st_mtime_ns) for p in store.rglob("*") if p.is_file())
    mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(store), str(store)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {mounted.stderr.strip()}")
    try:
        for args in (("query", "How do bees dance?"), ("ingest", str(corpus))):
            assert_clean_error(
                run(*args, "--store", str(store)), 1, "Read-only file system", "copy the store to a writable folder"
            )
    finally:
        subprocess.run(["umount", str(store)], check=True)
    assert sorted((p.relative_to(store), p.stat().st_mtime_ns) for p in store.rglob("*") if p.is_file()) == files_before
    assert snapshot(store) == before
