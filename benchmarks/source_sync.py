"""What keeping sources in sync costs: a folder, a git repository and a web site synced again,
unchanged and after a few edits, against their first sync; a watched folder's edits until they
are answerable; and one namespace's queries while another's source syncs.

    python benchmarks/source_sync.py --data ../shared/data --docs 2000 --json-out sync.json
    python benchmarks/source_sync.py --data ../shared/data --phases watch,fairness

Phases (``--phases``, all by default), each on a store of its own in a temporary folder:
- folder: SciFact's first ``--docs`` abstracts as files; the first sync, an unchanged sync, and
  one after ``--edits`` files change (files read, seconds);
- git: the same files as a git repository; first sync, unchanged sync, a commit of ``--edits``
  changed files;
- web: MultiHop-RAG's articles served as HTML pages (with ETags) by a loopback server, crawled
  from an index page; first sync, unchanged sync (each page answered 304);
- watch: the service with a watched folder source: a new file written, then polled until
  ``/v1/documents`` lists it (``--files`` times), and the same for its deletion (p50/p95 seconds);
- fairness: the service with two namespaces: squad-dev's first article's questions asked of one
  (``/v1/query``, evidence only) while idle, then while the other syncs ``--docs`` abstracts
  (p50/p95 ms, paired by question).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from etag_site import serve_pages  # this folder's
from query_latency import percentile

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.ingest.sources import SourceSpec

#: a file older than this is not racy: what the sync's remembered sizes and times are trusted for
AGED_SECONDS = 60


def aged(folder: Path) -> None:
    past = time.time() - AGED_SECONDS
    for path in folder.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            os.utime(path, (past, past))


def abstracts(data: Path, count: int, into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    files = sorted((data / "scifact" / "corpus").glob("*.txt"))[:count]
    for path in files:
        shutil.copyfile(path, into / path.name)
    return [into / path.name for path in files]


def synced(rag: QuorumRAG, name: str) -> dict:
    result = rag.sources().sync(name)
    return {
        "seconds": result.seconds,
        "files_read": result.files_read,
        "added": result.added,
        "changed": result.changed,
        "removed": result.removed,
        "unchanged": result.unchanged,
    }


def edit(files: list[Path], count: int) -> list[Path]:
    edited = files[:: max(1, len(files) // count)][:count]
    for path in edited:
        path.write_text(path.read_text() + "\nEdited for the sync benchmark.\n")
    return edited


def with_ratios(runs: dict[str, dict]) -> dict[str, dict]:
    first = runs["first"]["seconds"]
    for run in runs.values():
        run["share_of_first"] = round(run["seconds"] / first, 4)
    return runs


def folder_phase(args: argparse.Namespace, work: Path) -> dict:
    files = abstracts(args.data, args.docs, work / "abstracts")
    aged(work / "abstracts")
    with QuorumRAG(load_settings(store=work / "store-folder")) as rag:
        rag.sources().add(SourceSpec(name="abstracts", kind="folder", location=str(work / "abstracts")))
        runs = {"first": synced(rag, "abstracts"), "unchanged": synced(rag, "abstracts")}
        edit(files, args.edits)
        time.sleep(2.1)  # past the racy window: the edited files' times are trusted at once
        runs["edited"] = synced(rag, "abstracts")
    return with_ratios(runs)


def git(folder: Path, *arguments: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.org", *arguments],
        cwd=folder,
        check=True,
        capture_output=True,
    )


def git_phase(args: argparse.Namespace, work: Path) -> dict:
    repo = work / "repo"
    files = abstracts(args.data, args.docs, repo / "abstracts")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "abstracts")
    with QuorumRAG(load_settings(store=work / "store-git")) as rag:
        options = {"branch": "main", "under": "abstracts"}
        rag.sources().add(SourceSpec(name="papers", kind="git", location=str(repo), options=options))
        runs = {"first": synced(rag, "papers"), "unchanged": synced(rag, "papers")}
        edit(files, args.edits)
        git(repo, "commit", "-qam", "edits")
        runs["commit"] = synced(rag, "papers")
    return with_ratios(runs)


@contextmanager
def article_site(data: Path, count: int) -> Iterator[tuple[str, Counter[str]]]:
    """MultiHop-RAG's articles as HTML pages with ETags, linked from /site/, on a loopback port."""
    articles = sorted((data / "multihop-rag" / "corpus").glob("*.txt"))[:count]
    pages = {
        f"/site/{path.stem}.html": (
            f"<html><head><title>{html.escape(path.stem)}</title></head><body><main>"
            + "".join(f"<p>{html.escape(line)}</p>" for line in path.read_text().splitlines() if line.strip())
            + "</main></body></html>"
        ).encode()
        for path in articles
    }
    pages["/site/"] = ("<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in pages) + "</body></html>").encode()
    server, answered = serve_pages(pages)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/site/", answered
    finally:
        server.shutdown()
        server.server_close()


def web_phase(args: argparse.Namespace, work: Path) -> dict:
    with (
        article_site(args.data, args.pages) as (url, answered),
        QuorumRAG(load_settings(store=work / "store-web")) as rag,
    ):
        options = {"delay": 0, "max_pages": args.pages + 1}
        rag.sources().add(SourceSpec(name="news", kind="web", location=url, options=options))
        runs = {"first": synced(rag, "news") | {"200": answered["200"], "304": answered["304"]}}
        answered.clear()
        runs["unchanged"] = synced(rag, "news") | {"200": answered["200"], "304": answered["304"]}
    return with_ratios(runs)


def service_client(store: Path, namespaces: list[str], service: dict):
    from fastapi.testclient import TestClient

    from qrag_qdrant.service.app import create_app
    from qrag_qdrant.service.auth.keys import KeyFile

    keys = KeyFile.load(store / ".keys.toml")
    headers = {ns: {"Authorization": f"Bearer {keys.add(ns, 'admin')}"} for ns in namespaces}
    settings = load_settings(store=store, service={"rate_query": None, "rate_lookup": None, **service})
    return TestClient(create_app(settings)), headers


def until(check, what: str, limit: float = 120.0) -> float:
    """Seconds until ``check()`` holds, polled every 20 ms."""
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > limit:
            raise TimeoutError(what)
        time.sleep(0.02)
    return time.perf_counter() - started


def watch_phase(args: argparse.Namespace, work: Path) -> dict:
    root = work / "watched"
    folder = root / "notes"
    folder.mkdir(parents=True)
    (folder / "seed.txt").write_text("A first note, so the namespace is not empty.")
    store = work / "store-watch"
    store.mkdir()
    declared = {"namespace": "team", "name": "notes", "kind": "folder", "location": str(folder), "watch": True}
    client, headers = service_client(store, ["team"], {"ingest_roots": {"team": [str(root)]}, "sources": [declared]})
    appear, vanish = [], []
    texts = (args.data / "scifact" / "corpus").glob("*.txt")
    with client:
        client.app.state.service.sources.watch_ready.wait(60)

        def listed() -> set[str]:
            page = client.get("/v1/documents", params={"limit": 1000}, headers=headers["team"]).json()
            return {d["source"] for d in page["documents"]}

        until(lambda: "notes/seed.txt" in listed(), "the seed synced")
        for number in range(args.files):
            name = f"note-{number}.txt"
            written = time.perf_counter()
            (folder / name).write_text(next(texts).read_text())
            until(lambda name=name: f"notes/{name}" in listed(), name)
            appear.append(time.perf_counter() - written)
            removed = time.perf_counter()
            (folder / name).unlink()
            until(lambda name=name: f"notes/{name}" not in listed(), f"{name} removed")
            vanish.append(time.perf_counter() - removed)
    return {
        "files": args.files,
        "written_to_listed_s": {"p50": round(percentile(appear, 50), 3), "p95": round(percentile(appear, 95), 3)},
        "deleted_to_gone_s": {"p50": round(percentile(vanish, 50), 3), "p95": round(percentile(vanish, 95), 3)},
    }


def fairness_phase(args: argparse.Namespace, work: Path) -> dict:
    store = work / "store-fair"
    questions = [json.loads(line) for line in (args.data / "squad-dev" / "questions.jsonl").open()]
    first = questions[0]["doc"]
    asked = [q["question"] for q in questions if q["doc"] == first][: args.questions]
    corpus = work / "squad"
    corpus.mkdir()
    shutil.copyfile(args.data / "squad-dev" / "corpus" / first, corpus / first)
    with QuorumRAG(load_settings(store=store, namespace="asking")) as rag:
        rag.ingest(corpus)
    abstracts(args.data, args.docs, work / "fair-abstracts")
    root = work / "fair-abstracts"
    declared = {"namespace": "syncing", "name": "papers", "kind": "folder", "location": str(root)}
    service = {"ingest_roots": {"syncing": [str(root)]}, "sources": [declared], "cache_entries": 0}
    client, headers = service_client(store, ["asking", "syncing"], service)

    def ask_all() -> list[float]:
        seconds = []
        for question in asked:
            started = time.perf_counter()
            reply = client.post("/v1/query", json={"question": question, "generate": False}, headers=headers["asking"])
            reply.raise_for_status()
            seconds.append((time.perf_counter() - started) * 1000)
        return seconds

    with client:
        ask_all()  # warm
        idle = ask_all()
        job = client.post("/v1/sources/papers/sync", headers=headers["syncing"]).json()
        during, rounds = [], 0
        while client.get(f"/v1/jobs/{job['id']}", headers=headers["syncing"]).json()["state"] in ("queued", "running"):
            during += ask_all()
            rounds += 1
        final = client.get(f"/v1/jobs/{job['id']}", headers=headers["syncing"]).json()
    return {
        "questions": len(asked),
        "idle_ms": {"p50": round(percentile(idle, 50), 1), "p95": round(percentile(idle, 95), 1)},
        "during_sync_ms": {"p50": round(percentile(during, 50), 1), "p95": round(percentile(during, 95), 1)},
        "p95_ratio": round(percentile(during, 95) / percentile(idle, 95), 2),
        "rounds_during_sync": rounds,
        "sync": {k: final["report"][k] for k in ("seconds", "added")} if final.get("report") else final.get("error"),
    }


PHASES = {"folder": folder_phase, "git": git_phase, "web": web_phase, "watch": watch_phase, "fairness": fairness_phase}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--docs", type=int, default=2000, help="SciFact abstracts in the folder and the repository")
    parser.add_argument("--edits", type=int, default=10, help="files changed between syncs")
    parser.add_argument("--pages", type=int, default=609, help="MultiHop-RAG articles served as pages")
    parser.add_argument("--files", type=int, default=20, help="files written into the watched folder")
    parser.add_argument("--questions", type=int, default=40, help="questions asked in the fairness phase")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    results: dict[str, object] = {"command": " ".join(sys.argv), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="qrag-sync-") as work:
        for phase in args.phases.split(","):
            started = time.perf_counter()
            results[phase] = PHASES[phase](args, Path(work))
            print(phase, json.dumps(results[phase]), f"({time.perf_counter() - started:.0f} s)", flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
