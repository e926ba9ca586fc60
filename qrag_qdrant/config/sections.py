"""The sections of the one configuration model (``config.Settings``): what each stage reads.

Every field says what it does; the configuration reference (docs/reference/config.md) is generated
from these models, so a description here is what the user reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    SecretStr,
)


class Section(BaseModel):
    """A config section: unknown keys are errors, so a typo is never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


#: how a chunk's dense vector is made (``embedding.pooling``)
Pooling = Literal["auto", "chunk", "late", "anchored", "tiled"]


class EmbeddingServerSettings(Section):
    """An embedding server the ``openai`` or ``ollama`` embedder asks (``embedding.embedder``)."""

    url: str = Field(
        "", description="the server: an OpenAI-compatible API's base URL (http://host:8080/v1), or Ollama's"
    )
    api_key_env: str | None = Field(
        None, description="the environment variable holding the server's API key (never the key itself)"
    )
    batch_size: PositiveInt = Field(64, description="texts sent per request")
    concurrency: PositiveInt = Field(2, description="requests in flight at once while ingesting")
    timeout: PositiveFloat = Field(60.0, description="seconds a request may take")
    retries: NonNegativeInt = Field(4, description="a failed request is tried again this often, with backoff")
    backoff: PositiveFloat = Field(0.5, description="the first wait before a retry, doubled each time, with jitter")


class EmbeddingSettings(Section):
    embedder: str = Field(
        "fastembed",
        description="what embeds: fastembed (in-process, the default), openai (an OpenAI-compatible "
        "/v1/embeddings server), ollama, or a plug-in's name (the qrag_qdrant.embedders entry points)",
    )
    model: str = Field("sentence-transformers/all-MiniLM-L6-v2", description="the embedding model's name")
    dim: PositiveInt | None = Field(
        None, description="the vectors' size; needed for a served model, known of fastembed's own"
    )
    server: EmbeddingServerSettings = Field(
        default_factory=EmbeddingServerSettings, description="the server a served embedder asks"
    )
    path: Path | None = Field(None, description="local model directory; default: the packaged offline weights")
    batch_size: PositiveInt = Field(64, description="chunks embedded per model call while ingesting")
    threads: PositiveInt | None = Field(None, description="the model's threads; None: as many as cores")
    runtime: Literal["auto", "openvino", "onnxruntime"] = Field(
        "auto",
        description="what runs the model over documents' windows (anchored, tiled and late pooling): auto: "
        "OpenVINO where the openvino extra is installed and the model is a local folder (the packaged one or "
        "embedding.path), else onnxruntime; OpenVINO ran the packaged model 2.2x as fast, its vectors within "
        "0.999 cosine (docs/benchmarks.md)",
    )
    allow_download: bool = Field(False, description="let fastembed fetch the model from its hub")
    pooling: Pooling = Field(
        "auto",
        description="auto: a built namespace keeps the pooling it recorded; a new one gets anchored "
        "when the model mean-pools its tokens and a retriever's chunks have anchor_size words, else chunk; "
        "chunk: embed each chunk's text on its own; late: run the model once over windows of each document "
        "and mean-pool the token vectors inside every chunk, for all chunkings; anchored: as late, but the "
        "windows are the chunks of one chunking (anchor_size); tiled: as anchored, but the windows are the "
        "chunks of that chunking that do not overlap, so the model reads each token once",
    )
    anchor_size: PositiveInt = Field(
        50,
        description="anchored and tiled pooling: the chunk size (words) of the chunking "
        "whose chunks are the model's windows; one of the retrievers' sizes",
    )
    late_window_stride: PositiveInt = Field(
        192,
        description="late pooling: tokens between window starts "
        "(windows hold 254; the overlap gives tokens context on both sides)",
    )

    @property
    def fingerprint(self) -> str:
        """The model as a collection records it: its name, for fastembed's (as every namespace
        built before embedders were plug-ins recorded it), else ``<embedder>:<name>``."""
        return self.model if self.embedder == "fastembed" else f"{self.embedder}:{self.model}"

    @property
    def pooled_as(self) -> str:
        """What a collection's manifest records of the pooling: ``chunk``, ``late``, ``anchored-50``, ``tiled-50``."""
        return f"{self.pooling}-{self.anchor_size}" if self.anchored else self.pooling

    @property
    def anchored(self) -> bool:
        """Its windows are one chunking's chunks (``anchor_size``): anchored or tiled pooling."""
        return self.pooling in ("anchored", "tiled")

    def pooling_recorded(self, pooled_as: str) -> EmbeddingSettings:
        """These settings with the pooling a manifest recorded (``pooled_as`` read back)."""
        pooling, _, anchor = pooled_as.partition("-")
        return self.model_copy(update={"pooling": pooling} | ({"anchor_size": int(anchor)} if anchor else {}))


class OllamaSettings(Section):
    host: str = Field("http://localhost:11434", description="the Ollama server")
    model: str = Field("mistral", description="the Ollama model that writes answers")
    timeout: PositiveFloat = Field(120.0, description="seconds to wait for Ollama's next piece of an answer")
    keep_alive: str = Field(
        "5m", description="how long Ollama keeps the model loaded after a request (its keep_alive: 5m, 1h, -1 for ever)"
    )


class OpenAISettings(Section):
    """The ``openai`` backend: any OpenAI-compatible server (vLLM, the llama.cpp server, LM Studio,
    LiteLLM, TGI)."""

    base_url: str | None = Field(None, description="the server's API root, e.g. http://gpu-box:8000/v1")
    model: str | None = Field(None, description="the served model's id, as the server's /v1/models lists it")
    api_key_env: str = Field(
        "OPENAI_API_KEY",
        description="the environment variable that holds the server's key (the key itself is never in a config "
        "file or a log); unset: no key is sent",
    )
    timeout: PositiveFloat = Field(120.0, description="seconds one request may take, streaming included")
    max_retries: NonNegativeInt = Field(
        3,
        description="retries of a request refused with 429 or 5xx, or whose connection failed, backing off "
        "exponentially and honouring the server's Retry-After",
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="extra HTTP headers every request carries (values are kept secret)"
    )


class LlmSettings(Section):
    """The ``embedded`` backend: llama.cpp in a child process of this one, on a loopback port."""

    gguf: Path | None = Field(None, description="a GGUF model file (QRAG_LLM_GGUF); default: the packaged model")
    sha256: str | None = Field(None, description="refuse llm.gguf unless its sha256 is this")
    model: str | None = Field(
        None,
        description="the packaged model used without llm.gguf; default: the best "
        "one installed (1.5B from local-llm, else 0.5B from local-llm-small)",
    )
    # On 2 busy cores, 2 llama.cpp threads contend and can run 50x slower than 1 (docs/benchmarks.md).
    threads: PositiveInt = Field(1, description="llama.cpp threads: on 2 busy cores, 2 threads contend")
    batch: PositiveInt = Field(
        128,
        description="prompt tokens llama.cpp reads per step: a client that leaves frees the model within one "
        "step (128: about 2 s on one thread), and smaller steps read a prompt no slower",
    )
    context: PositiveInt = Field(4096, description="the model's context window in tokens")
    max_tokens: PositiveInt = Field(256, description="the longest answer, in tokens")
    decline_threshold: float | None = Field(
        None,
        gt=0,
        le=1,
        description='answer "not in the documents" when the model gives that reply at least this '
        "probability (from its first token), and answer otherwise; unset: whatever its likeliest first token starts",
    )


class GenerationSettings(Section):
    backend: str = Field(
        "auto",
        description="a registered backend (embedded, ollama, openai, or a plug-in's); auto: openai when "
        "openai.base_url is set, else ollama when ollama.host is set, else embedded when a local model is installed "
        "or llm.gguf is set, else ollama",
    )
    unsupported: Literal["mark", "refuse"] = Field(
        "mark",
        description="an answer with an unsupported claim (not grounded, not relevant, or doubted by the judge): "
        "shown marked, or refused",
    )
    min_relevance: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="a grounded claim is supported only when at least this share of the "
        "question's words occur in the sentence of the cited passage that holds it (0: grounding alone)",
    )
    min_answer_probability: float = Field(
        0.85,
        ge=0.0,
        le=1.0,
        description="a grounded, relevant claim is supported only when the model wrote its "
        "short answer with at least this geometric-mean token probability (backends that report log-probabilities; "
        "0: not checked)",
    )
    min_answer_probability_covered: float = Field(
        0.7,
        ge=0.0,
        le=1.0,
        description="the model's confidence a claim needs in place of min_answer_probability when the sentence "
        "that holds it carries nearly every key word of the question (coverage 0.9): the passage says what was "
        "asked, so a hesitant model is less likely wrong (chosen on the tuning articles' recorded answers: "
        "docs/benchmarks.md)",
    )
    samples: NonNegativeInt = Field(
        0,
        le=20,
        description="read the prompt this many more times at generation.sample_temperature (the prompt cache "
        "makes each a few tokens' work) and count the readings that give the (greedy) answer shown: its agreement; "
        "0: the greedy answer alone",
    )
    sample_temperature: float = Field(0.8, gt=0.0, le=2.0, description="the temperature of those readings")
    min_agreement: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="with samples: a claim is supported only when at least this share of the readings give "
        "the same answer (0: not checked)",
    )
    min_coverage: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="a grounded claim is supported only when the sentence that holds it (with its headings) "
        "carries at least this share of the question's key words, each weighed by its rarity in general language "
        "and in the namespace, the words typed in this turn most; a rare question word no document holds makes it 0 "
        "(0: not checked)",
    )
    rivals: bool = Field(
        True,
        description="a claim is ambiguous, and not supported, when another sentence of its cited passages matches "
        "the question as well and gives a different value of its kind (a number, a date, a name)",
    )
    time_order_from_dates: bool = Field(
        True,
        description="a question of two parts that asks only whether one event came before the other is "
        "answered from the dates of the documents that report them, without the model; false: the model answers it",
    )
    compare_values: bool = Field(
        True,
        description="a yes-or-no question of two parts that compares a value each states (the same notice period, "
        "more remote days) is answered by reading the two amounts from the passages and comparing them, without the "
        "model; false: the model answers it",
    )
    min_evidence_confidence: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="a claim is supported only when the evidence gate's confidence in the "
        "context reaches this (0: not checked; measured, not on by default: docs/benchmarks.md)",
    )
    judge: bool = Field(
        False,
        description="also ask the model whether the cited passages support each claim that "
        "passed the exact grounding check (one more model call per claim)",
    )
    answer_format: Literal["short", "quote"] = Field(
        "short",
        description="short: the shortest answer copied from a passage, then its [n]; quote: the sentence "
        "that answers, quoted with its [n], then 'Answer:' and the shortest answer",
    )


class QdrantSettings(Section):
    url: str | None = Field(None, description="Qdrant server URL; unset means the embedded store")
    api_key: SecretStr | None = Field(None, description="the server's API key, its read-only key, or a JWT")
    timeout: PositiveFloat = Field(10.0, description="seconds per call to the server")
    retries: NonNegativeInt = Field(
        3, description="retries of a call that failed to reach the server or that too few replicas acknowledged"
    )
    backoff: float = Field(
        0.5,
        ge=0.0,
        description="seconds before the first retry; doubles each time (at most 30), plus up to as much again "
        "at random, so clients that failed together do not retry together",
    )
    store: str = Field(
        "auto",
        description="a registered store: edge (embedded), server, or a plug-in's; auto: "
        "server when qdrant.url is set, else edge",
    )
    bm25_source: str = Field(
        "client",
        description="who computes BM25 vectors of a NEW collection, a registered BM25 source: client "
        "(qdrant_edge.Bm25 here), server (the server's qdrant/bm25, Qdrant >= 1.15.3) or a plug-in's; an existing "
        "collection keeps the source it was built with",
    )
    # How a NEW collection holds its data (an existing one keeps its layout; `ingest --rebuild` applies it).
    # The defaults take 1.10 KB of serving memory per chunk against 2.97 all in RAM, answer recall
    # unchanged (docs/scaling.md, "Memory per chunk"); none/false/false: all in RAM.
    quantization: Literal["none", "int8", "turbo4"] = Field(
        "int8",
        description="int8: the dense vectors are also kept as int8 (a quarter of their size) in RAM and "
        "searched first; the best oversampling x limit are rescored with the float32 originals; turbo4: the same "
        "copy at 4 bits a dimension (Qdrant's TurboQuant; a server needs Qdrant >= 1.18), 0.94 KB per chunk but "
        "+0.7 ms a query at 200k chunks per collection",
    )
    oversampling: float = Field(2.0, ge=1.0, description="with quantization: candidates rescored per hit asked for")
    vectors_on_disk: bool = Field(
        True,
        description="keep the float32 dense vectors and the BM25 index on disk "
        "(memory-mapped) instead of in RAM; with quantization only the rescored few are "
        "read",
    )
    payloads_on_disk: bool = Field(True, description="keep the chunks' payloads (their text) on disk instead of in RAM")
    hnsw_m: PositiveInt = Field(16, description="links per point of a new collection's HNSW graph")
    hnsw_ef_construct: PositiveInt = Field(
        256,
        description="candidates weighed per point while a new collection's HNSW graph is built: 256 instead of "
        "Qdrant's 100 took dense recall@15 at 200k points from 0.976 to 1.000 for an index build twice as long",
    )
    # Distributed mode: how new collections are laid out, and how many replicas a read asks.
    shard_number: PositiveInt = Field(1, description="distributed mode: shards of a new server collection")
    replication_factor: PositiveInt = Field(1, description="distributed mode: copies of each shard")
    write_consistency_factor: PositiveInt = Field(
        1, description="distributed mode: replicas that must acknowledge a write"
    )
    read_consistency: PositiveInt | Literal["majority", "quorum", "all"] = Field(
        1, description="distributed mode: replicas a read asks"
    )
