from pathlib import Path

import pytest

from qrag_qdrant.config.settings import DEFAULT_RETRIEVERS, Settings, load_settings
from qrag_qdrant.errors import ConfigError

#: the research tool's four retrievers, which benchmarks/experiments/origin.toml reproduces
RESEARCH_RETRIEVERS = [("dense", 50, 25), ("dense", 100, 50), ("dense", 200, 100), ("bm25", 100, 50)]


def test_the_research_tools_pipeline_still_loads_for_the_benchmarks():
    settings = load_settings(Path(__file__).resolve().parents[1] / "benchmarks" / "experiments" / "origin.toml")
    assert [(r.kind, r.size, r.overlap) for r in settings.retrievers] == RESEARCH_RETRIEVERS
    r = settings.retrieval
    assert (
        r.quorum,
        r.top_k,
        r.rrf_k,
        r.cluster_threshold,
        r.weight_rrf,
        r.weight_support,
        r.context.clusters,
        r.context.words,
        r.min_similarity,
    ) == (2, 15, 60, 0.85, 0.7, 0.3, 5, 0, 0)
    assert settings.ollama.model == "mistral"
    assert settings.embedding.model == "sentence-transformers/all-MiniLM-L6-v2"


def test_default_toml_is_the_tuned_pipeline_and_equals_the_builtin_defaults(repo_config):
    settings = load_settings(repo_config)
    # the built-in defaults equal the shipped file, so a run outside the repo behaves the same
    assert settings.model_dump() == Settings().model_dump() == load_settings().model_dump()
    assert settings.retrievers == DEFAULT_RETRIEVERS
    r = settings.retrieval
    assert (r.quorum, r.top_k, r.rrf_k, r.weight_rrf, r.weight_support, r.context.words) == (2, 15, 2, 0.7, 0.6, 500)


def test_two_collections_serve_the_four_default_retrievers():
    collections = load_settings().collections
    assert [c.name for c in collections] == ["default-c50-o25", "default-c100-o50"]
    assert [[r.name for r in c.retrievers] for c in collections] == [
        ["dense-c50", "bm25-c50"],
        ["dense-c100", "bm25-c100"],
    ]


def test_adding_bm25_on_an_existing_chunking_adds_no_collection():
    retrievers = [{"kind": kind, "size": size, "overlap": overlap} for kind, size, overlap in RESEARCH_RETRIEVERS]
    assert len(load_settings(retrievers=retrievers).collections) == 3
    settings = load_settings(retrievers=[*retrievers, {"kind": "bm25", "size": 50, "overlap": 25}])
    assert len(settings.collections) == 3
    assert [r.name for r in settings.collections[0].retrievers] == ["dense-c50", "bm25-c50"]


def test_collection_names_carry_the_namespace():
    assert load_settings(namespace="team-a").collections[1].name == "team-a-c100-o50"


def test_precedence_init_over_env_over_file(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text('namespace = "from-file"\n[retrieval]\ntop_k = 7\nquorum = 3\n')
    assert load_settings(config).namespace == "from-file"
    monkeypatch.setenv("QRAG_NAMESPACE", "from-env")
    monkeypatch.setenv("QRAG_RETRIEVAL_TOP_K", "9")
    settings = load_settings(config)
    assert (settings.namespace, settings.retrieval.top_k, settings.retrieval.quorum) == ("from-env", 9, 3)
    assert load_settings(config, namespace="from-init").namespace == "from-init"


def test_server_settings_from_environment(monkeypatch):
    monkeypatch.setenv("QRAG_QDRANT_URL", "http://qdrant:6333")
    monkeypatch.setenv("QRAG_QDRANT_API_KEY", "s3cret")
    monkeypatch.setenv("QRAG_STORE", "/data/store")
    settings = load_settings()
    assert settings.qdrant.url == "http://qdrant:6333"
    assert settings.qdrant.api_key.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.store == Path("/data/store")


def test_a_list_from_the_environment_is_json_or_one_clear_error(monkeypatch):
    monkeypatch.setenv("QRAG_RETRIEVAL_EXPANSIONS", '["multi_query:2", "hyde"]')
    assert load_settings().retrieval.expansions == ("multi_query:2", "hyde")
    monkeypatch.setenv("QRAG_RETRIEVAL_EXPANSIONS", "multi_query:2")
    with pytest.raises(
        ConfigError, match="""field "retrieval" .* is JSON, e.g. QRAG_RETRIEVAL_EXPANSIONS='\\["hyde"\\]'"""
    ):
        load_settings()


def dense(size, overlap):
    return {"kind": "dense", "size": size, "overlap": overlap}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"retrievers": [dense(50, 50)]}, "retrievers.0: overlap (50) must be smaller than size (50)"),
        (
            {"retrievers": [dense(50, 25)], "retrieval": {"quorum": 2}},
            "retrieval.quorum (2) is greater than the number of retrievers (1)",
        ),
        ({"retrievers": [{"kind": "splade", "size": 50, "overlap": 25}]}, "retrievers.0.kind"),
        ({"retrievers": [dense(50, 25), dense(50, 25)]}, "duplicate retriever dense-c50"),
        ({"retrievers": []}, "at least one retriever"),
        ({"retrieval": {"top_k": 0}}, "retrieval.top_k"),
        ({"retrieval": {"cluster_threshold": 1.5}}, "retrieval.cluster_threshold"),
        ({"retrieval": {"qourum": 2}}, "retrieval.qourum: unknown key"),
        ({"namespace": "Team A"}, "namespace 'Team A'"),
        ({"namespace": "team-c100-o50"}, "must not end like a collection suffix"),
        ({"namespace": "team-c100-o50-v2"}, "must not end like a collection suffix"),
        ({"namespace": "team/a"}, "namespace 'team/a'"),
        ({"namespace": "a" * 49}, "1-48 lower-case letters"),
        ({"qdrant": {"read_consistency": "most"}}, "qdrant.read_consistency"),
    ],
)
def test_invalid_config_names_the_field(overrides, message):
    with pytest.raises(ConfigError) as caught:
        load_settings(**overrides)
    assert message in str(caught.value)


def test_unknown_key_in_toml_is_an_error(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[retrieval]\ntopk = 5\n")
    with pytest.raises(ConfigError, match=r"retrieval.topk: unknown key"):
        load_settings(config)


def test_malformed_toml_and_missing_file(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("[retrieval\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(config)
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "missing.toml")


def test_a_sections_key_is_set_by_its_path_in_toml_and_in_the_environment(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text('[retrieval.parts]\ntop_k = 30\nmode = "off"\n[retrieval.context]\nmode = "fixed"\n')
    settings = load_settings(config)
    assert (settings.retrieval.parts.top_k, settings.retrieval.parts.mode, settings.retrieval.parts.words) == (
        30,
        "off",
        300,
    )
    assert settings.retrieval.context.mode == "fixed"
    monkeypatch.setenv("QRAG_RETRIEVAL_PARTS_TOP_K", "12")
    monkeypatch.setenv("QRAG_RETRIEVAL_CONVERSATION_HISTORY_WINDOW", "2")
    monkeypatch.setenv("QRAG_SERVICE_OIDC_LEEWAY_SECONDS", "5")
    settings = load_settings(config)
    assert (settings.retrieval.parts.top_k, settings.retrieval.parts.mode) == (12, "off")
    assert settings.retrieval.conversation.history_window == 2
    assert settings.service.oidc.leeway_seconds == 5
    monkeypatch.setenv("QRAG_RETRIEVAL_PARTS_TOPK", "5")
    with pytest.raises(ConfigError, match=r"retrieval.parts.topk: unknown key"):
        load_settings(config)


def test_a_key_by_its_former_flat_name_is_read_where_it_moved_with_a_warning(tmp_path, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text('[retrieval]\npart_top_k = 30\ncontext = "fixed"\nword_budget = 0\n')
    with pytest.warns(FutureWarning) as caught:
        settings = load_settings(config)
    assert (settings.retrieval.parts.top_k, settings.retrieval.context.mode, settings.retrieval.context.words) == (
        30,
        "fixed",
        0,
    )
    said = {str(warning.message) for warning in caught}
    assert (
        "retrieval.part_top_k is now retrieval.parts.top_k ([retrieval.parts] top_k = ..., "
        "QRAG_RETRIEVAL_PARTS_TOP_K); the old name is read until 0.6"
    ) in said
    assert len(said) == 3
    # the environment's former name overrides the file's new one, as any variable does
    config.write_text("[retrieval.parts]\ntop_k = 30\n")
    monkeypatch.setenv("QRAG_RETRIEVAL_PART_TOP_K", "7")
    monkeypatch.setenv("QRAG_RETRIEVAL_CONVERSATION", "last")
    with pytest.warns(FutureWarning) as caught:
        settings = load_settings(config)
    assert any("QRAG_RETRIEVAL_CONVERSATION_MODE" in str(warning.message) for warning in caught)
    assert (settings.retrieval.parts.top_k, settings.retrieval.conversation.mode) == (7, "last")
    # in one file, the section's own key wins over the former name
    monkeypatch.delenv("QRAG_RETRIEVAL_PART_TOP_K")
    config.write_text("[retrieval]\npart_top_k = 5\n[retrieval.parts]\ntop_k = 30\n")
    with pytest.warns(FutureWarning):
        assert load_settings(config).retrieval.parts.top_k == 30
