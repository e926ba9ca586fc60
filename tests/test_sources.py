"""Sources a namespace follows: a folder and a git repository synced exactly (new, changed,
renamed and deleted documents), only changed files read again, bad sources refused in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.ingest import corpus as corpus_module
from qrag_qdrant.ingest.corpus import RACY, FileDigests
from qrag_qdrant.ingest.sources import SourceError, SourceSpec

from .cli_helpers import assert_clean_error, run

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="the git program is not installed")


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def aged(folder: Path) -> None:
    """Every file's time set a minute back: the hashes a sync takes of them are then trusted."""
    past = time.time() - 60
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))


def held(rag: QuorumRAG) -> dict[str, str]:
    """source -> content hash of every document the namespace holds."""
    return {d.source: d.content_hash for d in rag.documents().page(0, 1000).documents}


@pytest.fixture
def rag(tmp_path, embedder):
    with QuorumRAG(load_settings(store=tmp_path / "store"), embedder=embedder) as opened:
        yield opened


def test_a_folder_sync_follows_edits_renames_and_deletions_and_leaves_other_documents(rag, tmp_path):
    folder = tmp_path / "handbook"
    write(
        folder,
        {"leave.md": "# Leave\n\nStaff get 25 days of annual leave.\n", "hours.txt": "The office opens at 8:00."},
    )
    other = tmp_path / "other"
    write(other, {"parking.txt": "Parking is free for staff."})
    rag.ingest(other)  # a document no source gave: no sync may remove it
    sources = rag.sources()
    sources.add(SourceSpec(name="handbook", kind="folder", location=str(folder)))
    first = sources.sync("handbook")
    assert (first.added, first.changed, first.removed, first.error) == (2, 0, 0, None)
    assert set(held(rag)) == {"parking.txt", "handbook/leave.md", "handbook/hours.txt"}

    (folder / "hours.txt").write_text("The office opens at 9:00.")
    (folder / "leave.md").rename(folder / "annual-leave.md")
    write(folder, {"travel/per-diem.txt": "The per diem in Sweden is 60 euros."})
    second = sources.sync("handbook")
    assert (second.added, second.changed, second.removed) == (2, 1, 1)
    assert set(held(rag)) == {
        "parking.txt",
        "handbook/annual-leave.md",
        "handbook/hours.txt",
        "handbook/travel/per-diem.txt",
    }
    evidence = rag.retrieve("When does the office open?")
    assert "9:00" in evidence.clusters[0].passages[0].text and "8:00" not in str(evidence.model_dump())

    for path in list(folder.rglob("*.*")):
        path.unlink()
    emptied = sources.sync("handbook")
    assert emptied.removed == 3 and set(held(rag)) == {"parking.txt"}
    assert sources.list()[0].last_success == emptied


def test_an_unchanged_folder_synced_again_reads_no_file_and_a_file_written_just_now_is_read_again(rag, tmp_path):
    folder = tmp_path / "notes"
    write(folder, {f"note-{i}.txt": f"Note {i} says the answer is {i}." for i in range(5)})
    aged(folder)
    sources = rag.sources()
    sources.add(SourceSpec(name="notes", kind="folder", location=str(folder)))
    assert sources.sync("notes").files_read == 5
    again = sources.sync("notes")
    assert (again.files_read, again.unchanged, again.added, again.changed) == (0, 5, 0, 0)
    (folder / "note-2.txt").write_text("Note 2 says the answer is 42.")  # just now: racy
    changed = sources.sync("notes")
    assert (changed.files_read, changed.changed) == (1, 1)
    assert sources.sync("notes").files_read == 1  # its hash was taken within the racy window


def test_a_file_written_while_it_is_read_keeps_its_last_version_and_is_read_again_next_sync(rag, tmp_path, monkeypatch):
    folder = tmp_path / "rota"
    write(folder, {"rota.txt": "Alice is on call this week.", "desk.txt": "The desk opens at 9:00."})
    sources = rag.sources()
    sources.add(SourceSpec(name="rota", kind="folder", location=str(folder)))
    sources.sync("rota")
    kept = held(rag)["rota/rota.txt"]
    read_text = corpus_module.extract

    def written_meanwhile(source, path, loader, digest):  # the editor saves between the hash and the text
        if source == "rota/rota.txt":
            path.write_text("Bob is on call this week, and Carol the next.")
        return read_text(source, path, loader, digest)

    (folder / "rota.txt").write_text("Dan is on call this week.")
    (folder / "desk.txt").write_text("The desk opens at 10:00.")
    monkeypatch.setattr(corpus_module, "extract", written_meanwhile)
    during = sources.sync("rota")
    assert during.skipped == {"rota/rota.txt": corpus_module.CHANGED_WHILE_READ} and during.error is None
    assert during.changed == 1 and held(rag)["rota/rota.txt"] == kept  # the rest synced, the last version kept
    monkeypatch.setattr(corpus_module, "extract", read_text)
    after = sources.sync("rota")
    assert after.changed == 1 and not after.skipped
    assert "Carol" in rag.retrieve("Who is on call?").clusters[0].passages[0].text


def test_a_hash_taken_within_the_racy_window_is_not_trusted(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one")
    digests = FileDigests()
    digest = digests.digest("a.txt", path)
    assert digests.found["a.txt"][1] == RACY and digests.read == 1
    assert FileDigests(digests.found).digest("a.txt", path) == digest  # read again, same bytes
    aged(tmp_path)
    trusted = FileDigests()
    trusted.digest("a.txt", path)
    again = FileDigests(trusted.found)
    assert again.digest("a.txt", path) == digest and again.read == 0


def git(folder: Path, *arguments: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Ada Lovelace", "-c", "user.email=ada@example.org", *arguments],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@needs_git
def test_a_git_sync_reads_only_the_files_a_commit_changed_and_records_their_commit(rag, tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_module, "RACY_SECONDS", -1.0)  # a checkout's files are written just before they are read
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {f"docs/release-{i}.md": f"Release {i} adds feature {i}." for i in range(20)} | {"app.py": "print()"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    sources = rag.sources()
    sources.add(
        SourceSpec(name="releases", kind="git", location=str(repo), options={"branch": "main", "under": "docs"})
    )
    first = sources.sync("releases")
    assert first.added == 20 and first.revision is not None and len(first.revision) == 40
    assert all(source.startswith("releases/release-") for source in held(rag))  # under docs/ only

    write(repo, {"docs/release-3.md": "Release 3 adds dark mode.", "docs/release-20.md": "Release 20 adds sync."})
    (repo / "docs" / "release-4.md").unlink()
    subprocess.run(
        ["git", "-c", "user.name=Grace Hopper", "-c", "user.email=g@example.org", "commit", "-qam", "second"],
        cwd=repo,
        check=True,
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "third")
    second = sources.sync("releases")
    assert (second.added, second.changed, second.removed, second.files_read) == (1, 1, 1, 2)
    assert second.revision != first.revision
    shown = rag.documents().get("releases/release-3.md")
    assert shown.author == "Grace Hopper" and shown.published is not None
    assert shown.revision == git(repo, "log", "-1", "--format=%H", "--", "docs/release-3.md").strip()
    assert shown.ingested_by == "source:releases" and shown.ingested_at is not None
    assert rag.documents().get("releases/release-5.md").author == "Ada Lovelace"
    assert "releases/release-4.md" not in held(rag)


@needs_git
def test_a_source_that_cannot_be_read_is_refused_in_one_line_and_recorded(rag, tmp_path):
    sources = rag.sources()
    sources.add(SourceSpec(name="gone", kind="git", location=str(tmp_path / "no-such-repo")))
    with pytest.raises(SourceError, match="^git clone: .*does not exist"):
        sources.sync("gone")
    assert "does not exist" in (sources.list()[0].last.error or "")
    assert sources.list()[0].last_success is None
    with pytest.raises(SourceError, match="nope: Extra inputs"):
        sources.add(SourceSpec(name="odd", kind="git", location=str(tmp_path), options={"nope": 1}))
    with pytest.raises(SourceError, match="not a repository"):
        sources.add(SourceSpec(name="odd", kind="git", location="ext::sh -c touch% /tmp/pwned"))
    with pytest.raises(ConfigError, match="'ftp' is not registered; known: folder, git"):
        sources.add(SourceSpec(name="odd", kind="ftp", location="x"))
    with pytest.raises(ConfigError, match="has a source 'gone' already"):
        sources.add(SourceSpec(name="gone", kind="folder", location=str(tmp_path)))
    with pytest.raises(ValueError, match="source name 'Odd Name'"):
        SourceSpec(name="Odd Name", kind="folder", location=".")


@needs_git
def test_a_repository_that_vanished_fails_its_sync_in_one_line_and_keeps_its_documents(rag, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"faq.md": "Refunds take five working days."})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    sources = rag.sources()
    sources.add(SourceSpec(name="faq", kind="git", location=str(repo)))
    first = sources.sync("faq")
    shutil.rmtree(repo)
    with pytest.raises(SourceError) as failed:
        sources.sync("faq")
    assert str(failed.value).startswith("git fetch: ") and "\n" not in str(failed.value)
    assert set(held(rag)) == {"faq/faq.md"}  # nothing removed for a source that cannot be read
    assert sources.list()[0].last_success == first and sources.list()[0].last.error == str(failed.value)


def test_removing_a_source_removes_its_documents_unless_kept(rag, tmp_path):
    folder = tmp_path / "minutes"
    write(folder, {"march.txt": "The board met in March.", "april.txt": "The board met in April."})
    sources = rag.sources()
    for name in ("kept", "minutes"):
        sources.add(SourceSpec(name=name, kind="folder", location=str(folder)))
        sources.sync(name)
    assert sources.remove("kept", keep_documents=True) == 0
    assert sources.remove("minutes") == 2
    assert set(held(rag)) == {"kept/march.txt", "kept/april.txt"} and sources.list() == []


def test_the_cli_adds_syncs_lists_and_removes_a_source(tmp_path):
    folder = tmp_path / "faq"
    write(folder, {"faq.md": "# FAQ\n\nThe help desk answers within two days.\n"})
    added = run("sources", "add", "faq", "folder", str(folder), "--json")
    assert added.exit_code == 0, added.stderr
    assert '"added": 1' in added.stdout
    write(folder, {"more.md": "The help desk is closed on Sundays."})
    synced = run("sources", "sync")
    assert synced.exit_code == 0 and "Synced 'faq' in" in synced.stdout and "1 added" in synced.stdout
    listed = run("sources", "list")
    assert "faq" in listed.stdout and "folder" in listed.stdout
    failed = run("sources", "add", "broken", "folder", str(tmp_path / "missing"))
    assert_clean_error(failed, 1, "is not there")
    assert "broken" not in run("sources", "list", "--json").stdout  # a first sync that fails adds nothing
    assert_clean_error(run("sources", "add", "x", "folder", str(folder), "--set", "branch"), 1, "KEY=VALUE")
    removed = run("sources", "remove", "faq")
    assert removed.exit_code == 0 and "2 documents" in removed.stdout


def test_sources_watch_syncs_a_folder_as_it_changes_until_interrupted(tmp_path):
    pytest.importorskip("watchfiles", reason="the sources extra brings watchfiles")
    import signal
    import sys

    folder = tmp_path / "inbox"
    write(folder, {"first.txt": "The first note of the inbox."})
    store = str(tmp_path / "store")
    assert run("sources", "add", "inbox", "folder", str(folder), "--store", store).exit_code == 0
    watching = subprocess.Popen(
        [sys.executable, "-m", "qrag_qdrant", "sources", "watch", "--store", store],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = iter(watching.stdout.readline, "")
        assert any(line.startswith("Watching 1 folder") for line in lines)
        assert "0 added" in next(lines)  # what changed before the watch: nothing
        write(folder, {"second.txt": "The second note of the inbox."})
        assert any("Synced 'inbox'" in line and "1 added" in line for line in lines)
    finally:
        watching.send_signal(signal.SIGINT)
        rest, _ = watching.communicate(timeout=60)
    assert watching.returncode == 0 and rest.rstrip().endswith("Stopped watching")


def test_a_racy_hash_is_settled_once_its_file_is_old_enough_and_still_the_same(tmp_path, monkeypatch):
    same, edited = tmp_path / "same.txt", tmp_path / "edited.txt"
    same.write_text("one")
    edited.write_text("two")
    digests = FileDigests()
    digests.digest("same.txt", same)
    digests.digest("edited.txt", edited)
    assert digests.settle() == 0  # both still racy
    edited.write_text("TWO")  # the same size, changed after its hash was taken
    aged(tmp_path)  # as if the sync had taken a minute
    assert digests.settle() == 1
    assert digests.found["same.txt"][1] != RACY and digests.found["edited.txt"][1] == RACY
    assert FileDigests(digests.found).digest("edited.txt", edited) != digests.found["edited.txt"][2]
