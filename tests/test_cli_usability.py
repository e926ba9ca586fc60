"""What a new user meets in the first hour: help that reads right, a version, progress that names
files, a service that says where it is, keys that say where they live, timings that add up."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from qrag_qdrant import __version__
from qrag_qdrant.cli.render import LineIngestProgress
from qrag_qdrant.ingest.corpus import SkippedFile

from .cli_helpers import QUESTION, run
from .ollama_standin import ollama_standin


@pytest.mark.parametrize("command", [[], ["query"], ["ingest"], ["key", "add"], ["gate", "calibrate"], ["serve"]])
def test_help_shows_flags_without_a_type_and_defaults_as_written(command):
    result = run(*command, "--help")
    assert result.exit_code == 0, result.stderr
    assert "<bool>" not in result.stdout
    assert "--help" in result.stdout and "Show this message and exit." in result.stdout
    if "--config" in result.stdout:
        assert "[default: the package's config/default.toml]" in " ".join(result.stdout.split())


def test_version_is_the_installed_distributions():
    result = run("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"qrag-qdrant {__version__}"
    assert __version__ != "0+unknown"


def test_verbose_logs_each_stage_to_stderr(ingested):
    try:
        result = run("-v", "query", "--no-generate", QUESTION)
        assert result.exit_code == 0, result.stderr
        assert "qrag_qdrant.retrieval.pipeline: retrieve:" in result.stderr
        quiet = run("query", "--no-generate", QUESTION)
        assert quiet.exit_code == 0 and "retrieve:" not in quiet.stderr
    finally:  # leave this process's logging as it was
        run("--help")
    assert logging.getLogger("qrag_qdrant").handlers == []


def test_the_timings_include_the_answers_generation(ingested):
    with ollama_standin() as ollama:
        result = run("query", "--json", QUESTION, env={"QRAG_OLLAMA_HOST": ollama.host})
    assert result.exit_code == 0, result.stderr
    timings = json.loads(result.stdout)["timings_ms"]
    assert timings["generation"] > 0 and timings["checks"] >= 0 and {"embed", "search", "gate"} <= set(timings)


def test_the_nothing_ingested_hint_names_the_namespace(tmp_path):
    result = run("query", "--no-generate", "--namespace", "team-a", QUESTION)
    assert result.exit_code == 1
    assert "run: qrag-qdrant ingest PATH --namespace team-a" in result.stderr


def test_ingest_progress_names_each_file_read_and_each_skipped_with_why(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("Bees dance to show where the flowers are.")
    (tmp_path / "docs" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    from qrag_qdrant.ingest.corpus import open_corpus

    progress = LineIngestProgress()
    corpus = open_corpus(tmp_path / "docs")
    progress.files_found(len(corpus.files))
    for document in corpus.documents(on_read=progress.file_read, on_skip=progress.file_skipped):
        document.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "ingest: 2 files found"
    assert "ingest: read notes.md (1 of 2)" in lines
    assert any(line.startswith("ingest: skipped photo.png: unsupported format") for line in lines)
    assert corpus.skipped == [SkippedFile("photo.png", corpus.skipped[0].reason)]


def test_key_add_says_where_the_key_file_is_and_leaves_only_it_and_the_audit_line(tmp_path):
    result = run("key", "add", "--namespace", "team-a")
    assert result.exit_code == 0, result.stderr
    key_file = Path(".qrag/.keys.toml").resolve()  # in the store's folder, whatever folder a command runs in
    assert str(key_file) in result.stderr and result.stdout.startswith("qrag_")
    assert sorted(p.name for p in Path(".").iterdir()) == [".qrag"]
    assert sorted(p.name for p in key_file.parent.iterdir()) == [".audit.jsonl", ".keys.toml"]
    (line,) = [json.loads(text) for text in Path(".qrag/.audit.jsonl").read_text().splitlines()]
    assert (line["event"], line["action"], line["namespace"]) == ("key", "added", "team-a")
    listed = json.loads(run("key", "add", "--namespace", "team-b", "--json").stdout)
    assert listed["key_file"] == str(key_file)


def test_the_services_files_live_in_the_store_unless_set_and_a_former_one_is_read_with_a_warning(tmp_path):
    from qrag_qdrant.config.settings import load_settings

    service = load_settings(store=tmp_path / "elsewhere").service
    assert (service.keys, service.audit_log, service.usage_db) == (
        tmp_path / "elsewhere" / ".keys.toml",
        tmp_path / "elsewhere" / ".audit.jsonl",
        tmp_path / "elsewhere" / ".usage.sqlite3",
    )
    assert load_settings(service={"keys": tmp_path / "keys.toml"}).service.keys == tmp_path / "keys.toml"
    Path(".qrag-keys.toml").write_text("")  # where a key file was kept before: the working folder
    with pytest.warns(FutureWarning, match=r"service.keys: .qrag-keys.toml in the working folder is read; move it"):
        assert load_settings().service.keys == Path(".qrag-keys.toml")
    Path(".qrag").mkdir()
    Path(".qrag/.keys.toml").write_text("")  # moved: the store's copy is read
    assert load_settings().service.keys == Path(".qrag/.keys.toml")


def test_serve_says_where_it_listens_and_logs_each_request(monkeypatch):
    import uvicorn

    started = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: started.update(options))
    assert run("key", "add", "--namespace", "team-a").exit_code == 0
    result = run("serve", "--port", "8123")
    assert result.exit_code == 0, result.stderr
    assert "serving on http://127.0.0.1:8123/ (the web page; API docs at http://127.0.0.1:8123/docs)" in result.stderr
    assert f"key file: {Path('.qrag/.keys.toml').resolve()} (1 key)" in result.stderr
    assert started["access_log"] is True and started["log_level"] == "info" and started["port"] == 8123


@pytest.mark.slow
def test_what_the_commands_write_is_readable_by_its_owner_only(corpus, tmp_path):
    """The store holds teams' documents; the key file, jobs and feedback their keys and questions."""
    import os
    import stat
    import subprocess
    import sys

    store = tmp_path / "private-store"
    before = os.umask(0o022)  # a usual, permissive umask in the shell that starts the command
    try:
        for command in (["ingest", str(corpus), "--store", str(store)], ["key", "add", "--namespace", "team-a"]):
            done = subprocess.run(
                [sys.executable, "-c", "from qrag_qdrant.cli.app import main; main()", *command],
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
    finally:
        os.umask(before)
    written = [store, *store.rglob("*"), Path(".qrag"), Path(".qrag/.keys.toml")]
    assert len(written) > 10
    loose = {str(p): oct(p.stat().st_mode & 0o777) for p in written if p.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)}
    assert loose == {}
