"""Extraction speed per document format, and peak memory on a large PDF.

    python benchmarks/document_throughput.py ../shared/data/squad-dev/corpus --large-pdf-mb 200 --json-out docs.json

Writes the same text (the first WORDS words of the corpus's articles, with their titles as
headings) as .txt, .pdf (fpdf2), .html and .docx (python-docx), then times extraction through
the registered loaders, as ingest runs it: words per second per format. With --large-pdf-mb,
it also builds a PDF of about that size (text pages, each carrying a large incompressible
image, as scans with a text layer do) and extracts it in a child process, reporting the
child's peak RSS and the file size. Needs the test and documents extras.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qrag_qdrant.ingest.corpus import content_hash, extract
from qrag_qdrant.ingest.loaders import LOADERS, loader_for


def articles(corpus: Path, words: int) -> list[tuple[str, str]]:
    """(title, text) pairs from the corpus until ``words`` words are taken."""
    taken, out = 0, []
    for path in sorted(corpus.glob("*.txt")):
        text = " ".join(path.read_text(encoding="utf-8").split()[: words - taken])
        out.append((path.stem.replace("-", " ").title(), text))
        taken += len(text.split())
        if taken >= words:
            break
    return out


def write_formats(folder: Path, parts: list[tuple[str, str]]) -> dict[str, Path]:
    import docx
    import fpdf

    paths = {fmt: folder / f"sample.{fmt}" for fmt in ("txt", "pdf", "html", "docx")}
    paths["txt"].write_text("\n\n".join(f"{title}\n\n{text}" for title, text in parts), encoding="utf-8")
    paths["html"].write_text(
        "<!doctype html><html><body><main>"
        + "".join(
            f"<h2>{title}</h2>" + "".join(f"<p>{para}</p>" for para in chunked(text, 120)) for title, text in parts
        )
        + "</main></body></html>",
        encoding="utf-8",
    )
    document = docx.Document()
    for title, text in parts:
        document.add_heading(title, level=1)
        for para in chunked(text, 120):
            document.add_paragraph(para)
    document.save(paths["docx"])
    pdf = fpdf.FPDF()
    pdf.set_font("helvetica", size=10)
    for title, text in parts:
        pdf.add_page()
        pdf.multi_cell(0, 5, latin1(f"{title}\n\n{text}"))
    pdf.output(str(paths["pdf"]))
    return paths


def chunked(text: str, words: int) -> list[str]:
    split = text.split()
    return [" ".join(split[i : i + words]) for i in range(0, len(split), words)]


def latin1(text: str) -> str:
    """fpdf2's core fonts are Latin-1."""
    return text.encode("latin-1", "replace").decode("latin-1")


def extraction_rate(path: Path) -> dict[str, float]:
    loader = loader_for(path, LOADERS.registered())
    digest = content_hash(path)  # hashing is not extraction: outside the timing
    started = time.perf_counter()
    document = extract(path.name, path, loader, digest)
    words = sum(len(block.split()) for block in document.blocks())
    seconds = time.perf_counter() - started
    document.close()
    return {"words": words, "seconds": round(seconds, 3), "words_per_s": round(words / seconds)}


def large_pdf(path: Path, megabytes: int, text: str) -> None:
    import fpdf
    from PIL import Image

    pdf = fpdf.FPDF()
    pdf.set_font("helvetica", size=10)
    image_mb = 12
    for page in range(max(1, megabytes // image_mb)):
        noise = Image.frombytes("RGB", (2000, 2000), os.urandom(2000 * 2000 * 3))  # does not compress
        pdf.add_page()
        pdf.image(noise, x=10, y=120, w=100)
        pdf.multi_cell(0, 5, latin1(f"Page {page + 1}. {text}"))
    pdf.output(str(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--words", type=int, default=50_000)
    parser.add_argument("--large-pdf-mb", type=int, default=0)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--extract-only", type=Path, help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args()
    if args.extract_only:
        rate = extraction_rate(args.extract_only)
        # VmHWM, not getrusage: ru_maxrss survives exec, so a child would report its parent's peak
        high_water = next(
            line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:")
        )
        rate["peak_rss_mb"] = round(int(high_water.split()[1]) / 1024)
        print(json.dumps(rate))
        return

    parts = articles(args.corpus, args.words)
    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="qrag-docs-") as folder:
        paths = write_formats(Path(folder), parts)
        for fmt, path in paths.items():
            result[fmt] = {**extraction_rate(path), "bytes": path.stat().st_size}
            print(f"{fmt:5s} {result[fmt]}", flush=True)
        if args.large_pdf_mb:
            path = Path(folder) / "large.pdf"
            large_pdf(path, args.large_pdf_mb, " ".join(parts[0][1].split()[:300]))
            for name, pdf in (("small_pdf_child", paths["pdf"]), ("large_pdf", path)):  # the small one: baseline RSS
                child = subprocess.run(
                    [sys.executable, __file__, str(args.corpus), "--extract-only", str(pdf)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result[name] = {**json.loads(child.stdout), "bytes": pdf.stat().st_size}
                print(f"{name} {result[name]}", flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
