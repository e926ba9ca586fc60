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
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from served_voter import gold_in  # this folder's
from service_latency import free_port

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval import EvalQuestion, load_dataset


def asked(rag: QuorumRAG, questions: list[EvalQuestion], tally: list[int]) -> None:
    """Each question once: ``tally`` is asked, failed, gold in the evidence."""
    for question in questions:
        tally[0] += 1
        try:
            tally[2] += gold_in(rag.retrieve(question.question), question.answers)
        except Exception:
            tally[1] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the squad-dev folder")
    parser.add_argument("--articles", type=int, default=4)
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between two questions, as users ask")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    dataset = load_dataset(args.data)
    articles = sorted({q.group for q in dataset.questions})[: args.articles]
    questions = [q for q in dataset.questions if q.group in articles and q.answerable]
    port = free_port()
    stand_in = Path(__file__).with_name("served_throughput.py")
    server = subprocess.Popen([sys.executable, str(stand_in), "--serve", str(port), "--data", str(args.data)])
    tally: dict[str, list[int]] = {"before": [0, 0, 0], "during": [0, 0, 0], "after": [0, 0, 0]}
    try:
        for _ in range(600):  # up when it answers; its model loads first
            try:
                httpx.get(f"http://127.0.0.1:{port}/stats")
                break
            except httpx.TransportError:
                time.sleep(0.5)
        with TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "corpus"
            corpus.mkdir()
            for name in articles:
                (corpus / name).write_text((dataset.corpus / name).read_text())
            before = load_settings(store=Path(tmp) / "store")
            served = {"embedder": "openai", "dim": 384, "server": {"url": f"http://127.0.0.1:{port}/v1"}}
            with QuorumRAG(before) as old:
                old.ingest(corpus)
                shutil.rmtree(corpus)  # nothing can be read again: the switch embeds the stored chunks' text
                asked(old, questions, tally["before"])
                new = QuorumRAG(load_settings(store=Path(tmp) / "store", embedding=served), store=old.store)
                done = threading.Event()

                def meanwhile() -> None:
                    while not done.is_set():
                        for question in questions:
                            if done.is_set():
                                return
                            asked(old, [question], tally["during"])
                            done.wait(args.pause)

                asking = threading.Thread(target=meanwhile)
                asking.start()
                started = time.perf_counter()
                try:
                    report = new.reembed()
                finally:
                    done.set()
                    asking.join()
                seconds = time.perf_counter() - started
                asked(new, questions, tally["after"])
                manifests = {spec.name: new.store.manifest(spec.name) for spec in new.settings.collections}
                new.coordinator.close()  # the store is the old pipeline's, closed with it
    finally:
        server.terminate()
        server.wait()
    chunks = sum(change.points for change in report.changed)
    result: dict[str, Any] = {
        "articles": len(articles),
        "chunks_embedded": chunks,
        "seconds": round(seconds, 1),
        "chunks_per_second": round(chunks / seconds, 1),
        "corpus_deleted_before_the_switch": True,
        "models_after": {name: m.model if m else None for name, m in manifests.items()},
        **{
            phase: {"asked": n, "failed": failed, "gold_in_evidence": round(gold / max(n - failed, 1), 3)}
            for phase, (n, failed, gold) in tally.items()
        },
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
