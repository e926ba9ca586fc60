"""Documents as users have them: PDF, HTML and Word beside text, built here with libraries from
the test extra, and every kind of bad file skipped with its reason while the rest is ingested."""

from __future__ import annotations

import io
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import NothingIngestedError
from qrag_qdrant.ingest import loaders
from qrag_qdrant.ingest.corpus import open_corpus
from qrag_qdrant.ingest.loaders import LoaderError, TextBlock, register_loader
from qrag_qdrant.ingest.loaders.pdf import PdfLoader
from qrag_qdrant.retrieval.context import Span, merge_spans
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.text.locations import Mark, locate

from .cli_helpers import assert_clean_error, run

fpdf = pytest.importorskip("fpdf", reason="the test extra brings fpdf2")
docx = pytest.importorskip("docx", reason="the docx extra brings python-docx")
pypdf = pytest.importorskip("pypdf", reason="the pdf extra brings pypdf")
pytest.importorskip("bs4", reason="the html extra brings beautifulsoup4")

LIGHTHOUSE = (
    "The Fresnel lens was invented by Augustin-Jean Fresnel in 1822. Its concentric prisms bend the "
    "light of a single lamp into a narrow horizontal beam that ships see from far out at sea."
)
KEEPERS = (
    "Lighthouse keepers trimmed the wicks, wound the clockwork that turned the lens, and logged every "
    "passing storm in the station journal."
)
ACCOUNTS = (
    "New employees receive their laptop on the first morning. The service desk creates the email "
    "account and the badge photo is taken at reception before noon."
)
VOLCANO = "Mount Vesuvius erupted in the year 79 and buried the Roman towns of Pompeii and Herculaneum under ash."
BEES = "Honeybee foragers perform the waggle dance to tell their sisters the direction and distance of flowers."


def pdf_bytes(pages: list[str], columns: tuple[str, str] | None = None) -> bytes:
    """A PDF with one text page per entry; ``columns`` adds a two-column page, written left column first."""
    document = fpdf.FPDF()
    document.set_font("helvetica", size=11)
    for text in pages:
        document.add_page()
        document.multi_cell(0, 6, text)
    if columns:
        document.add_page()
        for x, text in zip((10, 110), columns):
            document.set_xy(x, 20)
            document.multi_cell(90, 6, text)
    return bytes(document.output())


def docx_bytes() -> bytes:
    document = docx.Document()
    document.add_heading("Onboarding", level=1)
    document.add_paragraph("Welcome to the team. This handbook explains your first week.")
    document.add_heading("Accounts", level=2)
    document.add_paragraph(ACCOUNTS)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


HTML = f"""<!doctype html><html><head><title>Wiki</title><script>var tracking = 1;</script></head>
<body><nav>Home | About | Contact</nav><main>
<h1>Volcanoes</h1><p>An overview page.</p>
<h2>Vesuvius</h2><p>{VOLCANO}</p>
</main><footer>Copyright the wiki</footer></body></html>"""


def write_mixed(folder: Path) -> Path:
    folder.mkdir()
    (folder / "lighthouses.pdf").write_bytes(pdf_bytes(["A history of coastal lights.", LIGHTHOUSE, KEEPERS]))
    (folder / "wiki.html").write_text(HTML)
    (folder / "handbook.docx").write_bytes(docx_bytes())
    (folder / "bees.txt").write_text(BEES)
    (folder / "notes.md").write_text("# Notes\n\nDeep Blue, an IBM computer, defeated Garry Kasparov in 1997.\n")
    return folder


def query(store: Path, question: str) -> dict:
    result = run("query", "--no-generate", "--json", "--store", str(store), question)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def top_passages(answer: dict) -> list[dict]:
    return [passage for cluster in answer["clusters"][:1] for passage in cluster["passages"]]


@pytest.mark.slow
def test_a_mixed_folder_is_ingested_and_citations_name_pages_and_headings(tmp_path):
    corpus, store = write_mixed(tmp_path / "corpus"), tmp_path / "store"
    result = run("ingest", str(corpus), "--store", str(store), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["documents"] == 5 and report["skipped"] == []

    lens = top_passages(query(store, "Who invented the Fresnel lens and when?"))
    assert lens[0]["source"] == "lighthouses.pdf" and "Augustin-Jean Fresnel" in lens[0]["text"]
    first, last = lens[0]["pages"]
    assert first <= 2 <= last  # the lens is on page 2; the passage names page 1 only if it holds its text
    assert ("A history of coastal lights" in lens[0]["text"]) == (first == 1)
    assert ("station journal" in lens[0]["text"]) == (last == 3)

    volcano = top_passages(query(store, "Which Roman towns did Mount Vesuvius bury?"))
    assert volcano[0]["source"] == "wiki.html" and volcano[0]["heading"] == "Volcanoes › Vesuvius"
    assert "tracking" not in volcano[0]["text"] and "Copyright" not in volcano[0]["text"]

    laptop = top_passages(query(store, "When do new employees receive their laptop?"))
    assert laptop[0]["source"] == "handbook.docx" and laptop[0]["heading"].startswith("Onboarding")

    human = run("query", "--no-generate", "--store", str(store), "Who invented the Fresnel lens and when?")
    assert "lighthouses.pdf p. " in human.stdout

    again = json.loads(run("ingest", str(corpus), "--store", str(store), "--json").stdout)
    assert again["unchanged"] == 5 and again["embedded_chunks"] == 0  # hashes over the files' bytes


def encrypted_pdf() -> bytes:
    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(pdf_bytes([LIGHTHOUSE]))))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def scanned_pdf() -> bytes:
    """A page with only drawing on it, as a scan without OCR has only an image."""
    document = fpdf.FPDF()
    document.add_page()
    document.rect(20, 20, 100, 150, style="F")
    return bytes(document.output())


def zip_bomb() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
        archive.writestr("word/media/padding.bin", b"\0" * (64 << 20))
    return out.getvalue()


BAD_FILES = {
    "locked.pdf": (encrypted_pdf, "encrypted PDF"),
    "cut.pdf": (lambda: pdf_bytes([LIGHTHOUSE])[:400], "corrupt or truncated PDF"),
    "stub.pdf": (lambda: b"%PDF-1.4 nothing after the header", "corrupt or truncated PDF"),
    "scan.pdf": (scanned_pdf, "no text layer; OCR is not supported"),
    "bomb.docx": (zip_bomb, "zip bomb"),
    "empty.html": (lambda: b"<html><body><nav>menu</nav><script>x()</script></body></html>", "no readable text"),
    "blob.txt": (lambda: b"\x00\x01binary", "binary file"),
    "photo.png": (lambda: b"\x89PNG\r\n\x1a\n" + b"\0" * 32, "unsupported format (.png)"),
}


def test_bad_files_are_skipped_with_their_reason_and_the_rest_is_ingested(tmp_path, caplog):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, (make, _) in BAD_FILES.items():
        (corpus / name).write_bytes(make())
    (corpus / "bees.txt").write_text(BEES)
    result = run("ingest", str(corpus), "--store", str(tmp_path / "store"), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["documents"] == 1
    reasons = {skipped["source"]: skipped["reason"] for skipped in report["skipped"]}
    assert set(reasons) == set(BAD_FILES)
    for name, (_, reason) in BAD_FILES.items():
        assert reason in reasons[name] and "\n" not in reasons[name], (name, reasons[name])
    # pypdf's own warnings ("EOF marker not found") would print beside the skipped line that says it once
    assert not [record.getMessage() for record in caplog.records if record.name.startswith("pypdf")]

    (corpus / "chart.png").write_bytes(b"\x89PNG")
    human = run("ingest", str(corpus), "--store", str(tmp_path / "store"))
    assert "scan.pdf: no text layer; OCR is not supported" in human.stdout
    assert "2 files of unsupported formats: .png (2)" in human.stdout  # one line, however many
    assert "photo.png" not in human.stdout


def test_a_folder_with_nothing_readable_is_an_error_and_creates_nothing(tmp_path):
    corpus, store = tmp_path / "corpus", tmp_path / "store"
    corpus.mkdir()
    (corpus / "blob.txt").write_bytes(b"\x00\x01binary")
    assert_clean_error(
        run("ingest", str(corpus), "--store", str(store)), 1, "no readable documents", "blob.txt: binary file"
    )
    assert_clean_error(run("query", "--no-generate", "--store", str(store), "anything?"), 1, "ingest")


@pytest.mark.slow
def test_a_query_on_collections_without_documents_says_so(tmp_path, corpus, embedder):
    settings = load_settings(store=tmp_path / "store")
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        for spec in settings.collections:  # as an index emptied by hand or by an older version
            rag.store.delete_sources(spec.name, rag.store.sources(spec.name))
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        with pytest.raises(NothingIngestedError, match="holds no documents; run: qrag-qdrant ingest PATH"):
            rag.retrieve("How do bees find flowers?")


def test_a_missing_extra_names_its_install(tmp_path, monkeypatch):
    (tmp_path / "paper.pdf").write_bytes(pdf_bytes([LIGHTHOUSE]))
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if the pdf extra were not installed
    corpus = open_corpus(tmp_path / "paper.pdf")
    assert list(corpus.documents()) == []
    assert corpus.skipped[0].reason == "needs the pdf extra: pip install 'qrag-qdrant[pdf]'"


def test_a_two_column_page_reads_column_by_column(tmp_path):
    left = "Left column starts here. " + " ".join(f"alpha{n}" for n in range(40)) + " Left column ends."
    right = "Right column starts here. " + " ".join(f"omega{n}" for n in range(40)) + " Right column ends."
    path = tmp_path / "paper.pdf"
    path.write_bytes(pdf_bytes([], columns=(left, right)))
    text = " ".join(" ".join(block.text for block in PdfLoader().blocks(path)).split())
    order = [
        text.index(marker)
        for marker in (
            "Left column starts",
            "alpha39",
            "Left column ends",
            "Right column starts",
            "omega39",
            "Right column ends",
        )
    ]
    assert order == sorted(order), text[:300]


def test_a_plugin_loader_registers_like_the_built_ins(tmp_path, monkeypatch):
    class CsvLoader:
        suffixes = (".csv",)

        def sniff(self, head: bytes) -> bool:
            return False

        def blocks(self, path: Path) -> Iterator[TextBlock]:
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if not line.strip():
                    raise LoaderError(f"blank row {number}")
                yield TextBlock(line.replace(",", " "), headings=(f"row {number}",))

    monkeypatch.setattr(loaders.LOADERS, "local", {})  # forgotten after the test
    register_loader("csv", CsvLoader())
    (tmp_path / "good.csv").write_text("a,b\nc,d\n")
    (tmp_path / "bad.csv").write_text("a,b\n\n")
    corpus = open_corpus(tmp_path)
    documents = list(corpus.documents())
    assert [d.source for d in documents] == ["good.csv"]
    assert "".join(documents[0].blocks()) == "a b\n\nc d"
    assert documents[0].marks == (Mark(0, None, "row 1"), Mark(5, None, "row 2"))
    assert [(s.source, s.reason) for s in corpus.skipped] == [("bad.csv", "blank row 2")]


def test_only_new_or_changed_files_are_extracted_again(tmp_path, monkeypatch, embedder):
    extracted: list[str] = []

    class CountingLoader:
        suffixes = (".txt",)

        def sniff(self, head: bytes) -> bool:
            return False

        def blocks(self, path: Path) -> Iterator[TextBlock]:
            extracted.append(path.name)
            yield TextBlock(path.read_text())

    monkeypatch.setattr(loaders.LOADERS, "local", {})
    register_loader("text", CountingLoader())
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "bees.txt").write_text(BEES)
    (corpus / "volcano.txt").write_text(VOLCANO)
    settings = load_settings(store=tmp_path / "store")
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        assert sorted(extracted) == ["bees.txt", "volcano.txt"]  # once each, for all three chunkings
        extracted.clear()
        assert rag.ingest(corpus).unchanged == 2
        assert extracted == []  # hashed, not parsed
        (corpus / "bees.txt").write_text(BEES + " " + KEEPERS)
        report = rag.ingest(corpus)
        assert (extracted, report.unchanged) == (["bees.txt"], 1)


def test_spans_cut_from_chunks_keep_their_pages_and_headings():
    marks = [Mark(0, 1, None), Mark(100, 2, None), Mark(250, 3, None)]
    assert locate(marks, 10, 90) == ([1, 1], None)
    assert locate(marks, 90, 260) == ([1, 3], None)
    sections = [Mark(0, None, "A"), Mark(50, None, "A › B")]
    assert locate(sections, 60, 70) == (None, "A › B") and locate(sections, 10, 70) == (None, "A")
    assert locate(sections, 40, 100) == (None, "A › B")  # the heading over most of the span
    first = Span("doc.pdf", 0, 120, "x" * 120, frozenset(marks[:2]))
    second = Span("doc.pdf", 110, 260, "x" * 150, frozenset(marks[1:]))
    (merged,) = merge_spans([first, second])
    assert (merged.start, merged.end) == (0, 260) and locate(merged.marks, merged.start, merged.end)[0] == [1, 3]
