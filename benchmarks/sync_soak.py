"""A new user's run of sources kept in sync: ``qrag-qdrant serve`` follows a docs repository and
a small web site for ``--minutes`` while they are edited, and every edit is checked through HTTP.

    python benchmarks/sync_soak.py --minutes 10 --json-out soak.json

Every ``--every`` seconds one edit is made, in turn: a new repository file (committed), a new
site page (linked from the index), an edited repository file, a deleted one, a deleted page. A
new or edited fact is then asked about (``/v1/query``, evidence only) until its passage is in the
evidence; a deletion is watched in ``/v1/documents`` until the document is gone. The sources are
synced by the service's own schedule (``every`` 15 s); queries are counted throughout, each one
answered or not. Needs the service extra, git, and the sources extra.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from etag_site import serve_pages  # this folder's
from query_latency import percentile
from service_latency import free_port
from source_sync import git

CLI = str(Path(sys.executable).parent / "qrag-qdrant")
WORDS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel"]
#: what each fact is about: no two facts of a run share a subject, and consecutive ones share no
#: word of it (the lists' sizes, 11, 13 and 17, have no common factor: 2,431 subjects), so a
#: question tells them apart by its words. Facts told apart by a number alone ("window number
#: 105" among a hundred windows) are a retrieval test of their own: the first hour-long run's 5
#: misses of 140
SUBJECTS = (
    [
        "quarterly",
        "weekly",
        "annual",
        "nightly",
        "regional",
        "emergency",
        "winter",
        "summer",
        "spring",
        "autumn",
        "overnight",
    ],
    [
        "fire drill",
        "server patch",
        "audit",
        "board meeting",
        "inventory count",
        "payroll run",
        "backup test",
        "safety inspection",
        "budget review",
        "office move",
        "security training",
        "network upgrade",
        "press briefing",
    ],
    [
        "Lisbon",
        "Oslo",
        "Nairobi",
        "Denver",
        "Osaka",
        "Quito",
        "Tallinn",
        "Perth",
        "Accra",
        "Montreal",
        "Krakow",
        "Hanoi",
        "Tucson",
        "Bergen",
        "Cusco",
        "Dakar",
        "Reykjavik",
    ],
)


def subject(number: int) -> str:
    """The ``number``-th subject of the run."""
    return " ".join(words[number % len(words)] for words in SUBJECTS[:2]) + " in " + SUBJECTS[2][number % 17]


def fact(number: int, rng: random.Random) -> tuple[str, str, str]:
    """A sentence, the question it answers, and the word only it holds."""
    word = f"{rng.choice(WORDS)}{number}x{rng.randrange(10**6)}"
    about = subject(number)
    return f"The {about} is announced with the code word {word}.", f"Which code word announces the {about}?", word


class Site:
    def __init__(self) -> None:
        self.pages: dict[str, bytes] = {}
        self.lock = threading.Lock()

    def index(self) -> None:
        links = "".join(f'<a href="{path}">{path}</a> ' for path in sorted(self.pages) if path != "/site/")
        self.pages["/site/"] = f"<html><body><p>The team's pages.</p>{links}</body></html>".encode()

    def put(self, path: str, text: str) -> None:
        with self.lock:
            self.pages[path] = f"<html><head><title>{path}</title></head><body><p>{text}</p></body></html>".encode()
            self.index()

    def remove(self, path: str) -> None:
        with self.lock:
            self.pages.pop(path, None)
            self.index()


def make_edit(kind: str, number: int, sentence: str, repo: Path, site: Site) -> str | None:
    """Make one edit of ``kind``; the document a deletion removes (None for any other edit)."""
    if kind == "repo new":
        (repo / "docs" / f"note-{number}.md").write_text(f"# Note {number}\n\n{sentence}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"note {number}")
    elif kind == "site new":
        site.put(f"/site/news-{number}.html", sentence)
    elif kind == "repo edit":
        path = repo / "docs" / f"policy-{number % 10}.md"
        path.write_text(path.read_text() + f"\n{sentence}\n")
        git(repo, "commit", "-qam", f"edit {number}")
    elif kind == "repo delete":
        notes = sorted((repo / "docs").glob("note-*.md"))
        if notes:
            notes[0].unlink()
            git(repo, "commit", "-qam", f"delete {notes[0].name}")
            return f"handbook/{notes[0].name}"
    else:
        pages = sorted(path for path in site.pages if "/news-" in path)
        if pages:
            site.remove(pages[0])
            return f"site/{pages[0].removeprefix('/')}"
    return None


def ready(client: httpx.Client, served: subprocess.Popen[str], log: Path) -> bool:
    """Whether the service answers /readyz; a service that ended is the run's end, with its last words."""
    try:
        return client.get("/readyz").status_code == 200
    except httpx.HTTPError:  # not listening yet
        if served.poll() is not None:
            sys.exit(f"serve ended: {log.read_text()[-2000:]}")
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between edits")
    parser.add_argument("--sync-every", type=float, default=15.0, help="the sources' schedule, seconds")
    parser.add_argument("--limit", type=float, default=180.0, help="seconds an edit may take to show")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    rng = random.Random(3)
    work = Path(tempfile.mkdtemp(prefix="qrag-soak-"))
    repo = work / "handbook"
    (repo / "docs").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for number in range(10):
        (repo / "docs" / f"policy-{number}.md").write_text(
            f"# Policy {number}\n\nPolicy {number} applies to every team.\n"
        )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    site = Site()
    for number in range(5):
        site.put(f"/site/page-{number}.html", f"Page {number} of the team's site.")
    web, _ = serve_pages(site.pages, site.lock)
    web_port = web.server_address[1]
    store = work / "store"
    port = free_port()
    config = work / "config.toml"
    config.write_text(
        f'namespace = "team"\nstore = "{store}"\n\n[service]\nport = {port}\n'
        f'source_urls = ["http://127.0.0.1:{web_port}/site/"]\ncache_entries = 0\nrate_query = "100000/minute"\n'
        f'rate_lookup = "100000/minute"\nrate_ingest = "100000/minute"\n\n[service.ingest_roots]\nteam = ["{work}"]\n\n'
        f'[[service.sources]]\nnamespace = "team"\nname = "handbook"\nkind = "git"\nlocation = "{repo}"\n'
        f'options = {{ branch = "main", under = "docs" }}\nevery = {args.sync_every}\n\n'
        f'[[service.sources]]\nnamespace = "team"\nname = "site"\nkind = "web"\n'
        f'location = "http://127.0.0.1:{web_port}/site/"\noptions = {{ delay = 0 }}\nevery = {args.sync_every}\n'
    )
    env = dict(os.environ)
    key = (
        subprocess.run(
            [CLI, "key", "add", "--config", str(config), "--namespace", "team", "--name", "soak", "--admin"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    log = (work / "serve.log").open("w")  # a file: a pipe nobody reads would fill and stop the service
    served = subprocess.Popen([CLI, "serve", "--config", str(config)], stdout=log, stderr=log, text=True, env=env)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    counts = {"queries": 0, "answered": 0, "failed": 0}

    def ask(question: str) -> dict:
        counts["queries"] += 1
        try:
            reply = client.post("/v1/query", json={"question": question, "generate": False})
        except httpx.HTTPError:
            counts["failed"] += 1
            return {}
        counts["answered" if reply.status_code in (200, 404) else "failed"] += 1
        return reply.json() if reply.status_code == 200 else {}

    def documents() -> set[str]:
        page = client.get("/v1/documents", params={"limit": 1000})
        return {d["source"] for d in page.json()["documents"]} if page.status_code == 200 else set()

    def until(check, what: str) -> float | None:
        started = time.perf_counter()
        while time.perf_counter() - started < args.limit:
            if check():
                return time.perf_counter() - started
            time.sleep(0.5)
        print(f"not within {args.limit:g} s: {what}", flush=True)
        return None

    results: list[dict] = []
    try:
        until(lambda: ready(client, served, work / "serve.log"), "the service ready")
        until(lambda: len(documents()) == 16, "the first syncs: 10 files, 5 pages and the index")
        ends = time.monotonic() + args.minutes * 60
        number, kinds = 0, ["repo new", "site new", "repo edit", "repo delete", "site delete"]
        while time.monotonic() < ends:
            kind = kinds[number % len(kinds)]
            sentence, question, word = fact(number, rng)
            made = time.perf_counter()
            gone = make_edit(kind, number, sentence, repo, site)
            if gone is not None:
                seconds = until(lambda gone=gone: gone not in documents(), f"{gone} gone")
                results.append({"kind": kind, "document": gone, "seconds": seconds})
            elif not kind.endswith("delete"):

                def found(word: str = word, question: str = question) -> bool:
                    return any(word in p["text"] for c in ask(question).get("clusters", []) for p in c["passages"])

                results.append({"kind": kind, "seconds": until(found, question)})
            print(json.dumps(results[-1]) if results else kind, flush=True)
            number += 1
            time.sleep(max(0.0, args.every - (time.perf_counter() - made)))
    finally:
        served.terminate()
        served.wait(timeout=120)
        log.close()
        web.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    shown = [r["seconds"] for r in results if r["seconds"] is not None]
    summary = {
        "command": " ".join(sys.argv),
        "minutes": args.minutes,
        "edits": len(results),
        "shown": len(shown),
        "by_kind": {
            k: sum(1 for r in results if r["kind"] == k and r["seconds"] is not None)
            for k in {r["kind"] for r in results}
        },
        "seconds_to_show": {"p50": round(percentile(shown, 50), 1), "p95": round(percentile(shown, 95), 1)}
        if shown
        else None,
        "queries": counts,
        "results": results,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}))
    if args.json_out:
        args.json_out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
