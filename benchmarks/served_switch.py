"""A new user's run: a namespace switched from the packaged model to a served one while it answers.

    python benchmarks/served_switch.py --data ../shared/data/squad-dev --articles 4 --json-out served-switch.json

squad-dev's first ``--articles`` articles are ingested with the packaged model (in-process, anchored
pooling); the corpus folder is deleted; an OpenAI-compatible embedding server is started in another
process (``served_throughput.py``'s stand-in, serving all-MiniLM-L6-v2); and
``QuorumRAG.reembed`` (what ``qrag-qdrant retrievers reembed`` runs) re-embeds every collection's
dense vectors through it (the ``openai`` embedder) into new versions, while another thread asks the
articles' questions with the old config every ``--pause`` seconds. When the aliases move, the
application swaps to the new config and asks the questions again. Prints, and writes with
``--json-out``: the chunks re-embedded, seconds, chunks a second, the questions asked during the
switch and after, failed, and the share whose evidence held the gold answer before and after.

With ``--service`` the same switch is a running service's: ``qrag-qdrant serve`` is started over
the namespace with a config file, the questions go to ``POST /v1/query`` every ``--pause``
seconds, the config file's ``[embedding]`` is changed to the served model and the service sent
SIGHUP; it re-embeds the namespace in a job while it answers, and the questions go on until
``GET /v1/collections`` shows the new model.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from served_throughput import stand_in_server  # this folder's
from served_voter import gold_in, phases
from service_latency import free_port

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval import EvalQuestion, load_dataset
from qrag_qdrant.service.auth.keys import KeyFile

SERVED = "openai:sentence-transformers/all-MiniLM-L6-v2"


def asked(rag: QuorumRAG, questions: list[EvalQuestion], tally: list[int]) -> None:
    """Each question once: ``tally`` is asked, failed, gold in the evidence."""
    for question in questions:
        tally[0] += 1
        try:
            tally[2] += gold_in(rag.retrieve(question.question), question.answers)
        except Exception:
            tally[1] += 1


def through_the_service(
    store: Path, questions: list[EvalQuestion], served: str, pause: float, tally: dict[str, list[int]]
) -> float:
    """The switch of a running service (``--service``): its seconds from SIGHUP to the new model shown."""
    config, port = store.parent / "service.toml", free_port()
    key = KeyFile.load(store.parent / "keys.toml").add("default", "read")
    limits = 'rate_query = "100000/minute"\nrate_lookup = "100000/minute"\n'  # one key asks for every user here
    config.write_text(f'store = "{store}"\n\n[service]\nkeys = "{store.parent / "keys.toml"}"\n{limits}')
    service = subprocess.Popen(
        [sys.executable, "-m", "qrag_qdrant", "serve", "--config", str(config), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {key}"}
    try:
        for _ in range(1200):  # ready when /readyz says so; the models load first
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)

        def ask(phase: str, question: EvalQuestion) -> None:
            tally[phase][0] += 1
            response = httpx.post(
                f"{base}/v1/query", json={"question": question.question, "generate": False}, headers=headers, timeout=60
            )
            if response.status_code != 200:
                tally[phase][1] += 1
                return
            text = " ".join(p["text"] for c in response.json()["clusters"] for p in c["passages"]).lower()
            tally[phase][2] += any(answer.lower() in text for answer in question.answers)

        def models() -> set[str]:
            return {c["model"] for c in httpx.get(f"{base}/v1/collections", headers=headers).json()}

        for question in questions:
            ask("before", question)
        config.write_text(config.read_text() + f"\n[embedding]\n{served}\n")
        os.kill(service.pid, signal.SIGHUP)
        started = time.perf_counter()
        while models() != {SERVED}:  # asked as users ask, until the service shows the new model
            for question in questions:
                ask("during", question)
                time.sleep(pause)
                if models() == {SERVED}:
                    break
        seconds = time.perf_counter() - started
        for question in questions:
            ask("after", question)
        return seconds
    finally:
        service.terminate()
        service.wait()


def in_process(
    store: Path, questions: list[EvalQuestion], served: dict[str, Any], pause: float, tally: dict[str, list[int]]
) -> float:
    """The switch in one process: the old pipeline answers in a thread while the new one re-embeds;
    the seconds of ``reembed``."""
    with QuorumRAG(load_settings(store=store)) as old:
        asked(old, questions, tally["before"])
        new = QuorumRAG(load_settings(store=store, embedding=served), store=old.store)
        done = threading.Event()

        def meanwhile() -> None:
            while not done.is_set():
                for question in questions:
                    if done.is_set():
                        return
                    asked(old, [question], tally["during"])
                    done.wait(pause)

        asking = threading.Thread(target=meanwhile)
        asking.start()
        started = time.perf_counter()
        try:
            new.reembed()
        finally:
            done.set()
            asking.join()
        seconds = time.perf_counter() - started
        asked(new, questions, tally["after"])
        new.close(keep_store=True)  # the store is the old pipeline's, closed with it
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the squad-dev folder")
    parser.add_argument("--articles", type=int, default=4)
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between two questions, as users ask")
    parser.add_argument("--service", action="store_true", help="switch a running qrag-qdrant serve (SIGHUP)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    dataset = load_dataset(args.data)
    articles = sorted({q.group for q in dataset.questions})[: args.articles]
    questions = [q for q in dataset.questions if q.group in articles and q.answerable]
    tally: dict[str, list[int]] = {"before": [0, 0, 0], "during": [0, 0, 0], "after": [0, 0, 0]}
    with stand_in_server() as base, TemporaryDirectory() as tmp:
        url = f"{base}/v1"
        corpus, store = Path(tmp) / "corpus", Path(tmp) / "store"
        corpus.mkdir()
        for name in articles:
            (corpus / name).write_text((dataset.corpus / name).read_text())
        with QuorumRAG(load_settings(store=store)) as rag:
            chunks = rag.ingest(corpus).embedded_chunks
        shutil.rmtree(corpus)  # nothing can be read again: the switch embeds the stored chunks' text
        if args.service:
            toml = f'embedder = "openai"\ndim = 384\nserver = {{ url = "{url}" }}'
            seconds = through_the_service(store, questions, toml, args.pause, tally)
        else:
            served = {"embedder": "openai", "dim": 384, "server": {"url": url}}
            seconds = in_process(store, questions, served, args.pause, tally)
        with QuorumRAG(load_settings(store=store)) as rag:
            models = {
                spec.name: m.model if (m := rag.store.manifest(spec.name)) else None
                for spec in rag.settings.collections
            }
    result: dict[str, Any] = {
        "articles": len(articles),
        "through": "qrag-qdrant serve, SIGHUP" if args.service else "one process, QuorumRAG.reembed",
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "chunks_per_second": round(chunks / seconds, 1),
        "corpus_deleted_before_the_switch": True,
        "models_after": models,
        **phases(tally),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
