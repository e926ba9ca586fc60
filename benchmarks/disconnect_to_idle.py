"""How soon the embedded model serves the next request after the client of an answer leaves while
the model is still reading its long prompt.

    python benchmarks/disconnect_to_idle.py --words 1500 --leave-after 3 --batch 128

A long answer starts; after ``--leave-after`` seconds its client leaves and a short request is sent
at once: the seconds to that request's first token, against the same request on an idle model, say
how long the model stayed busy for a client that was gone. Compare ``--batch`` values
(``llm.batch``).
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation.answer import answer_from
from qrag_qdrant.generation.backends.embedded import EmbeddedGenerator
from qrag_qdrant.generation.base import GenerationResult
from qrag_qdrant.results import Evidence, EvidenceCluster, Passage

SHORT = [{"role": "user", "content": "Say yes."}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=1500)
    parser.add_argument("--leave-after", type=float, default=3.0)
    parser.add_argument("--batch", type=int, default=None, help="llm.batch [default: the config's]")
    args = parser.parse_args()
    settings = load_settings(**({"llm": {"batch": args.batch}} if args.batch else {}))
    backend = EmbeddedGenerator.from_settings(settings)

    def first_token() -> float:
        started = time.perf_counter()
        next(iter(backend._chat({"messages": SHORT, "max_tokens": 3}, GenerationResult())), None)
        return time.perf_counter() - started

    text = " ".join(f"fact{n} about the hive" for n in range(args.words // 4))
    passage = Passage(citation=1, source="long.txt", start=0, end=len(text), text=text)
    evidence = Evidence(
        question="What does the hive do?",
        abstained=False,
        retrievers=4,
        clusters=[EvidenceCluster(rank=1, score=1.0, support=4, retrievers=["dense-c50"], passages=[passage])],
        timings_ms={},
    )
    idle = first_token()
    gone = threading.Event()
    answering = threading.Thread(target=lambda: answer_from(evidence, lambda: backend, settings, cancelled=gone))
    answering.start()
    time.sleep(args.leave_after)  # the model is reading the long prompt
    gone.set()
    after = first_token()
    answering.join()
    summary = {
        "batch": settings.llm.batch,
        "prompt_words": args.words,
        "left_after_s": args.leave_after,
        "next_first_token_when_idle_s": round(idle, 2),
        "next_first_token_after_the_client_left_s": round(after, 2),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
