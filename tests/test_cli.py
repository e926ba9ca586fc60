"""The command line as a user meets it: output, --json, exit codes, one-line errors."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .cli_helpers import QUESTION, assert_clean_error, namespace_held_elsewhere, run
from .ollama_standin import ollama_standin
from .sample_corpus import DOCUMENTS


@pytest.mark.slow
def test_ingest_summary_then_unchanged_reingest(corpus):
    first = run("ingest", str(corpus), "--json")
    assert first.exit_code == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["documents"] == len(DOCUMENTS) and report["embedded_chunks"] > 0
    assert set(report["chunks"]) == {"default-c50-o25", "default-c100-o50"}
    again = run("ingest", str(corpus))
    assert again.exit_code == 0
    assert f"{len(DOCUMENTS)} unchanged, 0 chunks embedded" in again.stdout
    assert "default-c100-o50 -> default-c100-o50-v1: 23 chunks" in again.stdout and Path(".qrag").is_dir()


@pytest.mark.slow
def test_rebuild_reports_the_switch_and_what_it_dropped(ingested):
    result = run("ingest", str(ingested), "--rebuild")
    assert result.exit_code == 0, result.stderr
    assert "default-c100-o50 -> default-c100-o50-v2: 23 chunks" in result.stdout
    assert "Dropped 2 collections: default-c50-o25-v1, default-c100-o50-v1" in result.stdout
    report = json.loads(run("ingest", str(ingested), "--json").stdout)
    assert report["collections"]["default-c50-o25"] == "default-c50-o25-v2" and report["dropped"] == []


@pytest.mark.slow
def test_query_json_is_one_object_with_the_documented_fields(ingested):
    result = run("query", "--no-generate", "--json", QUESTION)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) >= {"question", "abstained", "answer", "clusters", "timings_ms"}
    assert data["abstained"] is False and data["answer"] is None
    top = data["clusters"][0]
    assert set(top) >= {"rank", "score", "support", "retrievers", "passages"}
    assert top["rank"] == 1 and top["support"] >= 2 and len(top["retrievers"]) == top["support"]
    assert set(top["passages"][0]) >= {"source", "start", "end", "text"}
    assert top["passages"][0]["source"] == "honeybees.txt"


@pytest.mark.slow
def test_a_json_query_prints_all_its_output_without_rich_and_leaves_its_garbage_to_the_os(ingested):
    """main() freezes the collector once the command is done, so the interpreter's exit skips a
    walk over every object (0.1 s of a CLI query); the output must still arrive whole. A --json
    query prints no message, so it never imports rich (about 40 ms)."""
    report = (
        "import atexit, gc, sys; atexit.register(lambda: sys.stderr.write("
        "f'frozen {gc.get_freeze_count()} rich {\"rich\" in sys.modules}'))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{report}; from qrag_qdrant.cli.app import main; main()",
            "query",
            "--no-generate",
            "--json",
            QUESTION,
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["clusters"][0]["passages"][0]["source"] == "honeybees.txt"
    frozen, rich = done.stderr.rsplit("frozen ", 1)[1].split(" rich ")
    assert int(frozen) > 10_000  # the objects of the imports and the query
    assert rich == "False"


@pytest.mark.slow
def test_query_streams_the_answer_then_the_cited_evidence(ingested):
    with ollama_standin() as ollama:
        result = run("query", QUESTION, env={"QRAG_OLLAMA_HOST": ollama.host})
    assert result.exit_code == 0, result.stderr
    assert "Foragers perform the waggle dance [1]." in result.stdout
    assert result.stdout.index("Answer") < result.stdout.index("Evidence")
    assert "[1] honeybees.txt chars" in result.stdout
    assert "/4 retrievers (" in result.stdout


@pytest.mark.slow
def test_unreachable_ollama_prints_evidence_and_exits_2(ingested):
    result = run("query", QUESTION, env={"QRAG_OLLAMA_HOST": "http://127.0.0.1:9"})
    assert_clean_error(result, 2, "cannot reach Ollama at http://127.0.0.1:9", "'mistral'", "ollama serve")
    assert "[1] honeybees.txt chars" in result.stdout


@pytest.mark.slow
def test_json_query_with_generation_error_still_prints_the_object(ingested):
    result = run("query", "--json", QUESTION, env={"QRAG_OLLAMA_HOST": "http://127.0.0.1:9"})
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["answer"] is None and data["clusters"] and "ollama serve" in data["error"]


@pytest.mark.slow
def test_abstention_is_said_plainly(ingested):
    result = run("query", "What is the capital of Mongolia?", env={"QRAG_OLLAMA_HOST": "http://127.0.0.1:9"})
    assert result.exit_code == 0  # abstaining never calls the model, so Ollama's absence does not matter
    assert "the retrievers did not agree on any evidence" in result.stdout


@pytest.mark.slow
def test_collections_lists_counts_model_and_retrievers(ingested):
    result = run("collections", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["namespace"] == "default" and data["count"] == 2
    assert {c["name"]: c["retrievers"] for c in data["collections"]}["default-c100-o50"] == ["dense-c100", "bm25-c100"]
    table = run("collections")
    assert "2 collections in namespace 'default'" in table.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("query", "   "), ("the question is empty",)),
        (("query", "x" * 5000), ("5000 characters long", "max_question_chars")),
        (("query", QUESTION), ("nothing ingested in namespace 'default'", "qrag-qdrant ingest")),
        (("ingest", "does-not-exist"), ("path does not exist: does-not-exist",)),
        (("query", QUESTION, "--config", "missing.toml"), ("config file not found",)),
        (("query", QUESTION, "--namespace", "Bad Name"), ("namespace 'Bad Name'",)),
    ],
)
def test_bad_input_is_one_clear_line(args, fragments):
    assert_clean_error(run(*args), 1, *fragments)


def test_empty_folder_and_folder_without_supported_files(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_clean_error(run("ingest", str(empty)), 1, "no files under")
    (empty / "image.png").write_bytes(b"\x89PNG")
    assert_clean_error(run("ingest", str(empty)), 1, "no readable documents", "image.png: unsupported format (.png)")
    assert not Path(".qrag").exists() or not any(p.name.startswith("default-") for p in Path(".qrag").iterdir())


def test_unusable_files_are_skipped_and_listed_and_the_rest_ingested(corpus):
    (corpus / "binary.txt").write_bytes(b"\x00\x01\x02 not text")
    (corpus / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (corpus / "blank.txt").write_text("  \n\n ")
    (corpus / "bom.txt").write_bytes("\ufeffA file with a byte order mark and\r\nWindows line endings.".encode())
    result = run("ingest", str(corpus), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    skipped = {s["source"]: s["reason"] for s in report["skipped"]}
    assert skipped == {"binary.txt": "binary file", "latin1.md": "not valid UTF-8 (byte 3)", "blank.txt": "empty"}
    assert report["documents"] == len(DOCUMENTS) + 1  # bom.txt is fine
    human = run("ingest", str(corpus))
    assert "Skipped 3 files:" in human.stdout and "latin1.md: not valid UTF-8" in human.stdout


@pytest.mark.slow
def test_bom_is_stripped_from_the_text(corpus):
    (corpus / "bom.txt").write_bytes("\ufeffZebrafish regenerate their fins.".encode())
    run("ingest", str(corpus))
    data = json.loads(run("query", "--no-generate", "--json", "Which fish regenerate fins?").stdout)
    texts = [p["text"] for c in data["clusters"] for p in c["passages"] if p["source"] == "bom.txt"]
    assert texts == ["Zebrafish regenerate their fins."]


def test_a_single_file_can_be_ingested(corpus):
    result = run("ingest", str(corpus / "volcanoes.md"), "--json")
    assert json.loads(result.stdout)["documents"] == 1


def test_store_held_by_another_process_is_a_clear_error(tmp_path):
    store = tmp_path / "held"
    with namespace_held_elsewhere(store):
        assert_clean_error(run("collections", "--store", str(store)), 1, "store is in use by another process")
    assert run("collections", "--store", str(store)).exit_code == 0  # free again once the holder is gone


@pytest.mark.parametrize(
    ("tokens", "sure", "why"),
    [
        # one passage is shown: [9] is read as [1] (a note says so), and the sentence is read
        # (with its file's name, honeybees.txt, which says "honeybee")
        (
            ["performs the waggle dance [1][9]"],
            None,
            'the sentence it comes from does not mention "sisters", "distance", "direction"\n'
            "note: the answer cited [9]; one passage was shown, so it is read as [1]",
        ),
        (["They sing to each other [1]"], None, "it is not found in the passages it cites"),
        (["a single queen [1]"], None, 'the sentence it comes from does not mention "forager", "sisters", "distance"'),
        (["the angle of the waggle run [1]"], 0.2, "the model was only 20% sure of it"),
    ],
)
@pytest.mark.slow
def test_the_query_output_says_why_a_claim_is_unsupported(ingested, tokens, sure, why):
    alternatives = [(tokens[0], math.log(sure))] if sure else None
    with ollama_standin(tokens=tokens, first_alternatives=alternatives) as ollama:
        result = run(
            "query",
            QUESTION,
            env={
                "QRAG_GENERATION_BACKEND": "ollama",
                "QRAG_OLLAMA_HOST": ollama.host,
                "QRAG_GENERATION_MIN_ANSWER_PROBABILITY": "0.5",
            },
        )
    assert result.exit_code == 0, result.stderr
    assert f"{tokens[0]}\nnot supported: {why}\n" in result.stdout, result.stdout


@pytest.mark.slow
def test_the_query_output_shows_the_readings_and_why_a_disputed_claim_is_unsupported(ingested):
    samples = [["the angle of the waggle run [1]"], ["the duration [1]"], ["the duration [1]"]]
    with ollama_standin(tokens=["the angle of the waggle run [1]"], samples=samples) as ollama:
        env = {"QRAG_GENERATION_BACKEND": "ollama", "QRAG_OLLAMA_HOST": ollama.host, "QRAG_GENERATION_SAMPLES": "3"}
        outvoted = run("query", QUESTION, env=env)
        disputed = run("query", QUESTION, env={**env, "QRAG_GENERATION_MIN_AGREEMENT": "0.75"})
    assert outvoted.exit_code == 0, outvoted.stderr
    assert "2 of 4 readings agree" in outvoted.stdout, outvoted.stdout
    assert disputed.exit_code == 0, disputed.stderr
    assert "not supported: only 2 of 4 readings gave it" in disputed.stdout, disputed.stdout


@pytest.mark.slow
def test_the_query_output_names_weak_evidence_when_asked_to_check_it(ingested):
    with ollama_standin(tokens=["the angle of the waggle run [1]"]) as ollama:
        result = run(
            "query",
            QUESTION,
            env={
                "QRAG_GENERATION_BACKEND": "ollama",
                "QRAG_OLLAMA_HOST": ollama.host,
                "QRAG_GENERATION_MIN_EVIDENCE_CONFIDENCE": "1",
            },
        )
    assert result.exit_code == 0, result.stderr
    assert re.search(r"not supported: the evidence is weak \(confidence 0\.\d{3}\)\n", result.stdout), result.stdout


def test_the_processes_the_cli_starts_run_blas_on_one_thread(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    from qrag_qdrant.cli import app as cli
    from qrag_qdrant.cli.threads import one_blas_thread

    with threadpool_limits(limits=2, user_api="blas"):  # restored when the test ends
        one_blas_thread()
        assert {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"} == {1}
    calls = []
    monkeypatch.setattr(cli, "one_blas_thread", lambda: calls.append("limited"))
    monkeypatch.setattr(sys, "argv", ["qrag-qdrant", "--help"])
    # main() makes a broken pipe end the process quietly, as a command should; the test process
    # keeps Python's own handling, so a test server's write to a closed socket raises instead
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)
    umask = os.umask(0o022)
    os.umask(umask)
    with pytest.raises(SystemExit):
        cli.main()
    os.umask(umask)
    assert calls == ["limited"]
