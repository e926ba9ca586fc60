"""One model, two teams, against a running ``qrag-qdrant serve``: how long team b waits for its one
answer while team a has a burst of answers in flight, and how soon the model is free again after
a client leaves in the middle of a long answer.

    qrag-qdrant ingest examples/handbook --namespace team-a; qrag-qdrant ingest examples/handbook --namespace team-b
    A=$(qrag-qdrant key add --namespace team-a); B=$(qrag-qdrant key add --namespace team-b)
    qrag-qdrant serve --port 8000 &
    python benchmarks/fair_queue.py burst --url http://127.0.0.1:8000 --key-a $A --key-b $B --burst 20
    QRAG_SERVICE_QUEUE_CAPACITY=7 qrag-qdrant serve ... # admission: team a's burst past the queue
    python benchmarks/fair_queue.py burst --url http://127.0.0.1:8000 --key-a $A --key-b $B --burst 8
    python benchmarks/fair_queue.py leave --url http://127.0.0.1:8000 --key-a $A --key-b $B --question "..."
    python benchmarks/fair_queue.py follow-ups --url http://127.0.0.1:8000 --key-a $A --key-b $B --burst 20

``burst``: team a sends ``--burst`` questions at once, then team b one; team b's seconds from its
request to its answer are compared with one answer's (the median of team a's). ``leave``: team a
streams an answer and leaves after its first event; team b's question, sent at that moment, gets
its first token when the model is free: its wait, less its own time to a first token when the
model is idle (measured first), is how long the model stayed busy for a client that was gone.
``follow-ups``: as ``burst``, with follow-ups whose evidence alone is asked for: each needs the
model only for its stand-alone rewrite; team b's seconds are compared with one rewrite's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable

import httpx

QUESTIONS = [
    "How many vacation days does a full-time employee get?",
    "How often does the on-call rotation change?",
    "How soon must a page be acknowledged?",
    "What is the on-call allowance per week?",
    "How long may unused vacation days be carried over?",
    "How long is paid parental leave?",
    "Which client connects to the VPN?",
    "How often is the VPN profile renewed?",
    "How many characters must a password have?",
    "What is the daily meal allowance when travelling?",
]


def ask(url: str, key: str, question: str) -> dict:
    started = time.perf_counter()
    reply = httpx.post(
        f"{url}/v1/query", json={"question": question}, headers={"Authorization": f"Bearer {key}"}, timeout=3600
    )
    timings = reply.json().get("timings_ms", {}) if reply.status_code == 200 else {}
    return {
        "seconds": time.perf_counter() - started,
        "status": reply.status_code,
        "queue_ms": timings.get("queue_wait"),
        "generation_ms": timings.get("generation"),
    }


def team_burst(args: argparse.Namespace, send: Callable[[str, str, str], dict], texts: list[str]) -> dict:
    """Team a sends ``--burst`` of ``texts`` at once (distinct: none is answered from the result
    cache), then team b one; each reply as ``send`` reads it, by team."""
    send(args.url, args.key_a, f"{texts[0]} (warm-up {time.time_ns()})")  # the model loaded, its prefix cached
    results: dict[str, list[dict]] = {"a": [], "b": []}
    threads = []
    for n in range(args.burst):
        question = f"{texts[n % len(texts)]} (burst {n} {time.time_ns()})"
        thread = threading.Thread(target=lambda q=question: results["a"].append(send(args.url, args.key_a, q)))
        thread.start()
        threads.append(thread)
    time.sleep(args.head_start)  # team a's requests are in before team b's
    results["b"].append(send(args.url, args.key_b, f"{texts[1]} ({time.time_ns()})"))
    for thread in threads:
        thread.join()
    return results


def burst(args: argparse.Namespace) -> dict:
    results = team_burst(args, ask, QUESTIONS)
    # one answer: the model's own time for one of team a's (those that reached it)
    generated = [r["generation_ms"] / 1000 for r in results["a"] if r["generation_ms"]]
    answer_seconds = statistics.median(generated) if generated else min(r["seconds"] for r in results["a"])
    return {
        "burst": args.burst,
        "team_b_status": results["b"][0]["status"],  # 503: refused, the queue held by team a
        "team_a_refused": sum(r["status"] == 503 for r in results["a"]),
        "team_b_seconds": round(results["b"][0]["seconds"], 2),
        "team_b_queue_ms": results["b"][0]["queue_ms"],
        "one_answer_seconds_median": round(answer_seconds, 2),
        "team_b_in_answers": round(results["b"][0]["seconds"] / answer_seconds, 2),
        "team_a_seconds_max": round(max(r["seconds"] for r in results["a"]), 2),
        "statuses": sorted({r["status"] for r in results["a"] + results["b"]}),
    }


#: an earlier turn every follow-up leans on, so each one is rewritten by the model
HISTORY = [
    {"role": "user", "content": "How often does the on-call rotation change?"},
    {"role": "assistant", "content": "Every Monday at 10:00 [1]."},
]
FOLLOW_UPS = ["And how is it compensated?", "And who does it escalate to?", "And what happens at handover?"]


def follow_up(url: str, key: str, question: str) -> dict:
    started = time.perf_counter()
    reply = httpx.post(
        f"{url}/v1/query",
        json={"question": question, "history": HISTORY, "generate": False},
        headers={"Authorization": f"Bearer {key}"},
        timeout=3600,
    )
    body = reply.json() if reply.status_code == 200 else {}
    return {
        "seconds": time.perf_counter() - started,
        "status": reply.status_code,
        "rewrite_ms": body.get("timings_ms", {}).get("conversation"),
        "how": (body.get("conversation") or {}).get("how"),
    }


def follow_ups(args: argparse.Namespace) -> dict:
    results = team_burst(args, follow_up, FOLLOW_UPS)
    rewrites = [r["rewrite_ms"] / 1000 for r in results["a"] if r["rewrite_ms"] and r["how"] == "rewritten"]
    one = min(rewrites) if rewrites else float("nan")  # a rewrite that did not wait: the model's own time
    return {
        "burst": args.burst,
        "team_b_seconds": round(results["b"][0]["seconds"], 2),
        "team_b_how": results["b"][0]["how"],
        "one_rewrite_seconds_min": round(one, 2),
        "team_b_in_rewrites": round(results["b"][0]["seconds"] / one, 2),
        "team_a_seconds_max": round(max(r["seconds"] for r in results["a"]), 2),
        "team_a_rewritten": sum(r["how"] == "rewritten" for r in results["a"]),
        "statuses": sorted({r["status"] for r in results["a"] + results["b"]}),
    }


def first_token_seconds(url: str, key: str, question: str, leave_after_first: bool = False) -> float:
    started = time.perf_counter()
    with httpx.stream(
        "POST",
        f"{url}/v1/query",
        json={"question": question, "stream": True},
        headers={"Authorization": f"Bearer {key}"},
        timeout=3600,
    ) as reply:
        for line in reply.iter_lines():
            if leave_after_first and line.startswith("event: evidence"):
                return time.perf_counter() - started  # the client leaves here: the answer has begun
            if line.startswith("event: token"):
                return time.perf_counter() - started
    return time.perf_counter() - started


def leave(args: argparse.Namespace) -> dict:
    first_token_seconds(args.url, args.key_b, f"{QUESTIONS[1]} (warm-up {time.time_ns()})")  # model loaded
    idle = first_token_seconds(args.url, args.key_b, f"{QUESTIONS[2]} ({time.time_ns()})")
    first_token_seconds(args.url, args.key_a, f"{args.question} ({time.time_ns()})", leave_after_first=True)
    time.sleep(args.head_start)  # the model is reading team a's long prompt when team a leaves
    left_at = time.perf_counter()
    waited = first_token_seconds(args.url, args.key_b, f"{QUESTIONS[2]} (again {time.time_ns()})")
    return {
        "team_b_first_token_when_idle_s": round(idle, 2),
        "team_b_first_token_after_a_left_s": round(waited, 2),
        "model_busy_after_client_left_s": round(max(waited - idle, 0.0), 2),
        "measured_from": round(left_at, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("burst", "leave", "follow-ups"))
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--key-a", required=True)
    parser.add_argument("--key-b", required=True)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--head-start", type=float, default=2.0, help="seconds team a's requests go first")
    parser.add_argument("--question", default="Summarise everything these passages say.", help="leave: team a's")
    args = parser.parse_args()
    run = {"burst": burst, "leave": leave, "follow-ups": follow_ups}[args.mode]
    print(json.dumps(run(args), indent=2))


if __name__ == "__main__":
    main()
