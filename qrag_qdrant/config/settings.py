"""The one configuration model that flows down through every stage.

Precedence, as in pydantic-settings: init arguments > environment (``QRAG_...``) >
TOML file (``--config``, default: the package's ``config/default.toml``) > the defaults
of the models, which equal that file.

Environment names: ``QRAG_<FIELD>`` at the top level (``QRAG_STORE``, ``QRAG_NAMESPACE``),
``QRAG_<SECTION>_<FIELD>`` inside a section (``QRAG_QDRANT_URL``, ``QRAG_RETRIEVAL_TOP_K``), and
so on down (``QRAG_RETRIEVAL_PARTS_TOP_K``): ``SectionedEnvSource`` splits a name where a
section's name ends, so a key's own underscores need no other delimiter.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from ..errors import ConfigError
from .names import NAMESPACE_MAX_LENGTH, NAMESPACE_PATTERN, RESERVED_NAMESPACE_SUFFIX, collection_name
from .retrieval import RetrievalSettings, moved_key
from .sections import (
    EmbeddingSettings,
    GenerationSettings,
    LlmSettings,
    OllamaSettings,
    OpenAISettings,
    QdrantSettings,
    Section,
)
from .service import STATE_FILES, ServiceSettings, state_file
from .values import check_expansions

#: the shipped pipeline, found beside the package wherever it is installed or run from
DEFAULT_CONFIG_FILE = Path(__file__).with_name("default.toml")
DENSE_VECTOR = "dense"
SPARSE_VECTOR = "bm25"
#: a model's name in ``[embeddings]``: part of its vector's and its retrievers' names
EMBEDDING_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


class RetrieverSpec(Section):
    """One independent retriever: a vector kind searched over one chunking of the corpus."""

    kind: Literal["dense", "bm25"] = Field(description="dense embeddings or BM25 over the chunking")
    embedding: str | None = Field(
        None,
        description="a dense retriever's model: a name in [embeddings.<name>], searched as a vector of its own "
        "beside the others; None: [embedding]",
    )
    size: PositiveInt = Field(description="chunk size in words")
    overlap: NonNegativeInt = Field(description="words shared by consecutive chunks")
    expansions: tuple[str, ...] | None = Field(
        None, description="the query expansions this retriever also searches; None: retrieval.expansions"
    )

    @model_validator(mode="after")
    def _overlap_below_size(self) -> RetrieverSpec:
        if self.overlap >= self.size:
            raise ValueError(f"overlap ({self.overlap}) must be smaller than size ({self.size})")
        check_expansions(self.expansions or ())
        if self.embedding is not None and self.kind != "dense":
            raise ValueError(f"embedding {self.embedding!r}: only a dense retriever has a model")
        return self

    @property
    def name(self) -> str:
        """``dense-c50``, ``dense-e5-c50`` (a model of ``[embeddings]``); the overlap is named only
        when it is not the usual half of the size."""
        suffix = "" if self.overlap == self.size // 2 else f"-o{self.overlap}"
        model = f"-{self.embedding}" if self.embedding is not None else ""
        return f"{self.kind}{model}-c{self.size}{suffix}"

    @property
    def vector(self) -> str:
        """The named vector it searches: ``dense``, ``dense-<embedding>`` or ``bm25``."""
        if self.kind == "bm25":
            return SPARSE_VECTOR
        return DENSE_VECTOR if self.embedding is None else named_vector(self.embedding)


def named_vector(embedding: str) -> str:
    """The vector of a model of ``[embeddings]``: ``dense-<name>``."""
    return f"{DENSE_VECTOR}-{embedding}"


class CollectionSpec(BaseModel):
    """One chunking (size, overlap): one collection, shared by every retriever that uses it."""

    model_config = ConfigDict(frozen=True)

    name: str
    size: int
    overlap: int
    retrievers: tuple[RetrieverSpec, ...]

    @property
    def stride(self) -> int:
        return self.size - self.overlap

    @property
    def embeddings(self) -> tuple[str, ...]:
        """The models of ``[embeddings]`` its retrievers search, each a named vector of its points."""
        return tuple(dict.fromkeys(r.embedding for r in self.retrievers if r.embedding is not None))


def section(annotation: Any) -> type[BaseModel] | None:
    """The model a field's annotation is, when it is a section of keys."""
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def key_path(name: str, model: type[BaseModel]) -> list[str]:
    """``retrieval_parts_top_k`` -> ``["retrieval", "parts", "top_k"]``: the name split where one of
    ``model``'s sections (and theirs, down) ends; the longest field name that fits is taken."""
    for field, info in sorted(model.model_fields.items(), key=lambda item: -len(item[0])):
        inner = section(info.annotation)
        if name == field:
            return [field]
        if inner is not None and name.startswith(field + "_"):
            return [field, *key_path(name[len(field) + 1 :], inner)]
    return [name]


class SectionedEnvSource(EnvSettingsSource):
    """``QRAG_*`` variables named by their key's path (``key_path``); an earlier release's name of a
    key that moved (``QRAG_RETRIEVAL_PART_TOP_K``, ``QRAG_RETRIEVAL_CONTEXT=fixed``) is read as the
    key's new path, with a warning (``retrieval.moved_key``)."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        prefix, delimiter = self.env_prefix.lower(), str(self.env_nested_delimiter)
        loaded: dict[str, str | None] = {}
        for name, value in super()._load_env_vars().items():
            if not name.lower().startswith(prefix):
                loaded[name] = value
                continue
            path = key_path(name[len(prefix) :].lower(), self.settings_cls)
            if path[:-1] == ["retrieval"]:
                path = ["retrieval", *moved_key(path[-1], value)]
            loaded[prefix + delimiter.join(path)] = value
        return loaded


#: Dense and BM25 on 50- and 100-word chunkings: two collections. A 200-word chunking cost a third
#: collection and took answer recall down (docs/design.md, "Two chunkings").
DEFAULT_RETRIEVERS = (
    RetrieverSpec(kind="dense", size=50, overlap=25),
    RetrieverSpec(kind="dense", size=100, overlap=50),
    RetrieverSpec(kind="bm25", size=50, overlap=25),
    RetrieverSpec(kind="bm25", size=100, overlap=50),
)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="QRAG_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    config_file: Path | None = Field(None, exclude=True, description="TOML file the settings were read from")
    namespace: str = Field("default", description="the team's namespace: the prefix of its collections")
    store: Path = Field(
        Path(".qrag"),
        description="the embedded store's folder, and the service's state (keys, audit log, usage, uploads, jobs) "
        "beside either store",
    )
    retrievers: tuple[RetrieverSpec, ...] = Field(
        DEFAULT_RETRIEVERS, description="the independent retrievers; each chunking is one collection"
    )
    retrieval: RetrievalSettings = RetrievalSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    ollama: OllamaSettings = OllamaSettings()
    openai: OpenAISettings = OpenAISettings()
    llm: LlmSettings = LlmSettings()
    generation: GenerationSettings = GenerationSettings()
    qdrant: QdrantSettings = QdrantSettings()
    service: ServiceSettings = ServiceSettings()
    embeddings: dict[str, EmbeddingSettings] = Field(
        default_factory=dict,
        description="more dense models, [embeddings.<name>], each a vector of its own that the dense retrievers "
        "naming it (embedding = '<name>') search beside [embedding]'s; each embeds a chunk's text on its own",
    )
    embedders: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="a plug-in embedder's own settings, [embedders.<name>], read by the model it declares "
        "(docs/extending.md)",
    )
    backends: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="a plug-in generation backend's own settings, [backends.<name>], read by the model it declares",
    )
    loaders: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="a plug-in document loader's own settings, [loaders.<name>], read by the model it declares",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = init_settings.init_kwargs.get("config_file")  # type: ignore[attr-defined]
        if toml_file is None and DEFAULT_CONFIG_FILE.is_file():
            toml_file = DEFAULT_CONFIG_FILE
        sources: tuple[PydanticBaseSettingsSource, ...] = (init_settings, SectionedEnvSource(settings_cls))
        if toml_file is not None:
            sources += (TomlConfigSettingsSource(settings_cls, toml_file=Path(toml_file)),)
        return sources

    @model_validator(mode="before")
    @classmethod
    def _service_state_in_store(cls, data: Any) -> Any:
        """The service's files that are not set go in the store's folder (``service.state_file``)."""
        if not isinstance(data, dict):
            return data
        store = Path(data.get("store") or cls.model_fields["store"].default)
        service = data.get("service") or {}
        placed: ServiceSettings | dict[str, Any]
        if isinstance(service, ServiceSettings):
            unset = [name for name in STATE_FILES if name not in service.model_fields_set]
            placed = service.model_copy(update={name: state_file(store, name) for name in unset})
        else:
            placed = {**{name: state_file(store, name) for name in STATE_FILES if name not in service}, **service}
        return {**data, "service": placed}

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if not NAMESPACE_PATTERN.match(self.namespace) or len(self.namespace) > NAMESPACE_MAX_LENGTH:
            raise ValueError(
                f"namespace {self.namespace!r}: use 1-48 lower-case letters, digits, '_' and single '-' between them"
            )
        if RESERVED_NAMESPACE_SUFFIX.search(self.namespace):
            raise ValueError(f"namespace {self.namespace!r} must not end like a collection suffix (-c<N>-o<N>)")
        if not self.retrievers:
            raise ValueError("retrievers: at least one retriever is needed")
        seen: set[str] = set()
        for spec in self.retrievers:
            if spec.name in seen:
                raise ValueError(f"retrievers: duplicate retriever {spec.name}")
            seen.add(spec.name)
        self._embeddings_named()
        if self.embedding.anchored and self.anchor is None:
            raise ValueError(
                f"embedding.anchor_size ({self.embedding.anchor_size}) is not the chunk size of any "
                f"retriever: {self.embedding.pooling} pooling needs one of {sorted({r.size for r in self.retrievers})}"
            )
        if self.retrieval.quorum > len(self.retrievers):
            raise ValueError(
                f"retrieval.quorum ({self.retrieval.quorum}) is greater than the number of "
                f"retrievers ({len(self.retrievers)})"
            )
        return self

    def _embeddings_named(self) -> None:
        """Every model a retriever names is in ``[embeddings]``, named as a vector may be, and embeds
        chunk by chunk (late and anchored pooling are ``[embedding]``'s)."""
        for name, model in self.embeddings.items():
            if not EMBEDDING_NAME.match(name):
                raise ValueError(f"embeddings.{name}: use 1-32 lower-case letters, digits and '_', a letter first")
            if model.pooling not in ("auto", "chunk"):
                raise ValueError(f"embeddings.{name}.pooling: a model of [embeddings] embeds each chunk on its own")
        for spec in self.retrievers:
            if spec.embedding is not None and spec.embedding not in self.embeddings:
                known = ", ".join(sorted(self.embeddings)) or "none"
                raise ValueError(
                    f"retrievers: {spec.name} names embedding {spec.embedding!r}, which [embeddings] does not "
                    f"hold (known: {known})"
                )

    def expansions_of(self, retriever: RetrieverSpec) -> tuple[str, ...]:
        """The expansions ``retriever`` searches: its own, else retrieval.expansions."""
        return retriever.expansions if retriever.expansions is not None else self.retrieval.expansions

    @property
    def anchor(self) -> CollectionSpec | None:
        """Anchored pooling's chunking: the first collection of ``embedding.anchor_size`` words."""
        return next((spec for spec in self.collections if spec.size == self.embedding.anchor_size), None)

    @property
    def collections(self) -> tuple[CollectionSpec, ...]:
        """Retrievers grouped by chunking, in first-seen order."""
        grouped: dict[tuple[int, int], list[RetrieverSpec]] = {}
        for spec in self.retrievers:
            grouped.setdefault((spec.size, spec.overlap), []).append(spec)
        return tuple(
            CollectionSpec(
                name=collection_name(self.namespace, size, overlap), size=size, overlap=overlap, retrievers=tuple(specs)
            )
            for (size, overlap), specs in grouped.items()
        )


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Read the settings, turning every validation or TOML problem into one ConfigError."""
    if config_file is not None and not Path(config_file).is_file():
        raise ConfigError(f"config file not found: {config_file}")
    overrides = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings(config_file=config_file, **overrides)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {config_file or DEFAULT_CONFIG_FILE} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None
    except SettingsError as exc:  # an environment variable that is not the JSON a list or table needs
        raise ConfigError(
            f"invalid config: {exc}: a list in an environment variable is JSON, e.g. "
            """QRAG_RETRIEVAL_EXPANSIONS='["hyde"]'"""
        ) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line per problem, each naming its field, without pydantic's URLs."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling)"
        problems.append(f"{field}: {message}" if field else message)
    return "invalid config: " + "; ".join(problems)
