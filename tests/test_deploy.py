"""deploy/ checked as far as a machine without Docker allows: the compose files parse, every
file they reference exists, images are pinned, auth and health checks are on, the cluster's
nodes join the first, and the cluster config loads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from qrag_qdrant.config.settings import load_settings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
COMPOSE_FILES = [DEPLOY / "docker-compose.yml", DEPLOY / "cluster" / "docker-compose.yml"]


def compose(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def qdrant_services(path: Path) -> dict[str, dict]:
    return {
        name: service
        for name, service in compose(path)["services"].items()
        if service["image"].startswith("qdrant/qdrant")
    }


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_compose_file_parses_and_its_qdrant_is_pinned_secured_and_checked(path):
    services = qdrant_services(path)
    assert services
    for name, service in services.items():
        tag = service["image"].split(":")[1]
        assert tag.startswith("v1.") and tag >= "v1.16", f"{name}: pin Qdrant >= 1.16 (collection metadata)"
        assert service["environment"]["QDRANT__SERVICE__JWT_RBAC"] == "true"
        assert "readyz" in " ".join(service["healthcheck"]["test"])
        assert any(volume.endswith(":/qdrant/storage") for volume in service["volumes"])
        assert service["restart"] == "unless-stopped"


#: an image tag that names one release or build: a version or build number, never latest or a bare variant
PINNED_TAG = re.compile(r"^v?\d+(\.\d+)*$|^[a-z-]+-b\d+$")


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_image_is_pinned_to_a_release_or_built_here(path):
    for name, service in compose(path)["services"].items():
        image = service["image"]
        if "build" in service:  # built from this repository
            continue
        repository, _, tag = image.rpartition(":")
        assert repository and PINNED_TAG.match(tag), f"{name}: {image} is not pinned to a release"


def test_the_pin_check_refuses_floating_tags():
    assert not any(PINNED_TAG.match(tag) for tag in ("latest", "server", "main", "server-cuda"))
    assert all(PINNED_TAG.match(tag) for tag in ("v1.16.0", "0.13.0", "server-b6500"))


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_every_file_a_compose_file_references_exists(path):
    """env files hold real keys and are git-ignored: their committed template must exist."""
    document = compose(path)
    for name, service in document["services"].items():
        env_files = service.get("env_file", [])
        for env_file in [env_files] if isinstance(env_files, str) else env_files:
            target = (path.parent / env_file).resolve()
            template = target.with_name(target.name + ".example")
            assert template.is_file(), f"{name}: {env_file} has no committed template {template.name}"
            assert target.name in (target.parent / ".gitignore").read_text().split()
            keys = dict(
                line.split("=", 1) for line in template.read_text().splitlines() if line and not line.startswith("#")
            )
            assert {"QDRANT__SERVICE__API_KEY", "QDRANT__SERVICE__READ_ONLY_API_KEY"} <= keys.keys()
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source in document["volumes"] or (path.parent / source).exists(), f"{name}: {volume}"


def test_the_single_server_has_ollama_with_a_model_volume_and_pull_instructions():
    services = compose(DEPLOY / "docker-compose.yml")["services"]
    assert any(volume.endswith(":/root/.ollama") for volume in services["ollama"]["volumes"])
    assert "ollama pull mistral" in (DEPLOY / "README.md").read_text()
    assert "ollama pull mistral" in (DEPLOY.parent / "docs" / "deploy.md").read_text()


def test_the_cluster_has_three_nodes_that_join_the_first():
    services = qdrant_services(DEPLOY / "cluster" / "docker-compose.yml")
    assert len(services) == 3
    commands = {name: service["command"] for name, service in services.items()}
    uris = {name: command[command.index("--uri") + 1] for name, command in commands.items()}
    assert len(set(uris.values())) == 3 and all(uri.endswith(":6335") for uri in uris.values())
    founders = [name for name, command in commands.items() if "--bootstrap" not in command]
    assert len(founders) == 1
    for name, command in commands.items():
        if name != founders[0]:
            assert command[command.index("--bootstrap") + 1] == uris[founders[0]]
            assert services[name]["depends_on"][founders[0]]["condition"] == "service_healthy"
        assert services[name]["environment"]["QDRANT__CLUSTER__ENABLED"] == "true"
    storages = {v for service in services.values() for v in service["volumes"] if v.endswith(":/qdrant/storage")}
    assert len(storages) == 3  # each node its own storage


def test_the_cluster_config_creates_three_shards_with_two_replicas(monkeypatch):
    monkeypatch.setenv("QRAG_QDRANT_API_KEY", "from-the-environment")
    settings = load_settings(DEPLOY / "cluster" / "qrag-cluster.toml")
    qdrant = settings.qdrant
    assert (qdrant.shard_number, qdrant.replication_factor, qdrant.read_consistency) == (3, 2, "majority")
    assert qdrant.write_consistency_factor <= qdrant.replication_factor
    assert qdrant.api_key.get_secret_value() == "from-the-environment"  # keys never in the file
    assert settings.retrievers == load_settings().retrievers  # the rest keeps the defaults


def test_the_single_server_runs_the_service_beside_qdrant_and_ollama():
    document = compose(DEPLOY / "docker-compose.yml")
    qrag = document["services"]["qrag"]
    assert (DEPLOY / qrag["build"]["context"] / qrag["build"]["dockerfile"]).resolve().is_file()
    environment = qrag["environment"]
    assert (
        environment["QRAG_QDRANT_URL"] == "http://qdrant:6333"
        and environment["QRAG_OLLAMA_HOST"] == "http://ollama:11434"
    )
    assert environment["QRAG_QDRANT_API_KEY"].startswith("${QRAG_QDRANT_API_KEY:?")  # never written in the file
    assert qrag["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert "readyz" in " ".join(qrag["healthcheck"]["test"]) and "8000:8000" in qrag["ports"]
    assert any(volume.endswith(":/keys") for volume in qrag["volumes"])
    assert environment["QRAG_SERVICE_KEYS"].startswith("/keys/")
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "[offline,service,documents,openai]" in dockerfile and '"serve", "--host", "0.0.0.0"' in dockerfile


def test_an_openai_compatible_model_server_is_a_profile_the_service_can_point_at():
    services = compose(DEPLOY / "docker-compose.yml")["services"]
    server, environment = services["llamacpp"], services["qrag"]["environment"]
    assert server["profiles"] == ["llamacpp"]  # off unless asked for: Ollama stays the default
    assert server["environment"]["LLAMA_API_KEY"].startswith("${QRAG_MODEL_SERVER_KEY:?")  # never in the file
    assert "--alias" in server["command"] and "/health" in " ".join(server["healthcheck"]["test"])
    assert any(volume.endswith(":/models:ro") for volume in server["volumes"])
    assert environment["QRAG_OPENAI_BASE_URL"] == "${QRAG_OPENAI_BASE_URL:-}"  # empty: auto keeps Ollama
    assert environment["QRAG_OPENAI_API_KEY_ENV"] == "QRAG_MODEL_SERVER_KEY"
    settings = load_settings(openai={"base_url": "http://llamacpp:8080/v1", "model": "local"})
    assert settings.openai.base_url == "http://llamacpp:8080/v1"  # the keys the compose file sets are real keys
    assert load_settings(openai={"base_url": ""}).openai.base_url == ""
