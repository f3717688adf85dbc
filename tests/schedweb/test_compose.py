"""docker-compose.yml: the services (a scheduler worker per shard), their images, commands,
healthchecks and wiring."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _command(service: dict) -> str:
    command = service["command"]
    return " ".join(command) if isinstance(command, list) else command


def test_services_and_images(compose):
    services = compose["services"]
    assert sorted(services) == ["beat", "postgres", "redis", "web", "worker-a", "worker-b",
                                "worker-background"]
    assert services["postgres"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"
    assert {services[s]["image"] for s in ("web", "worker-a", "worker-b", "worker-background", "beat")} == {
        "python:3.11-slim"}


@pytest.mark.parametrize(("service", "expected"), [
    ("web", "gunicorn schedweb.wsgi:application --bind 0.0.0.0:8000"),
    ("web", "-c python:schedweb.gunicorn_conf"),
    ("worker-a", "celery -A schedweb worker"),
    ("worker-b", "celery -A schedweb worker"),
    ("beat", "celery -A schedweb beat"),
])
def test_app_commands(compose, service, expected):
    assert expected in _command(compose["services"][service])


@pytest.mark.parametrize("shard", ["a", "b"])
def test_each_shard_worker_consumes_its_cycle_queue_one_cycle_at_a_time(compose, shard):
    service = compose["services"][f"worker-{shard}"]
    command = service["command"]
    queues = command[command.index("-Q") + 1].split(",")
    assert "--pool=solo" in command and "--concurrency=1" in command
    node = command[command.index("-n") + 1].split("@")[0]
    assert f"-d {node}@$$HOSTNAME" in service["healthcheck"]["test"][1]
    # Background tasks (the forecast) never share the cycle's worker: they would delay cycles.
    assert queues == [f"scheduler-{shard}"]
    assert shard in service["environment"]["SCHEDULER_SHARDS"].split(":-")[1].rstrip("}").split(",")
    background = compose["services"]["worker-background"]["command"]
    assert background[background.index("-Q") + 1] == "celery"


def test_every_service_has_a_healthcheck(compose):
    for name, service in compose["services"].items():
        check = service["healthcheck"]["test"]
        assert check[0] in ("CMD", "CMD-SHELL") and len(check) >= 2, name
    assert "/healthz" in " ".join(compose["services"]["web"]["healthcheck"]["test"])
    assert "pg_isready" in compose["services"]["postgres"]["healthcheck"]["test"][1]
    assert compose["services"]["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_depends_on_wait_for_healthy_dependencies(compose):
    services = compose["services"]
    healthy = {"condition": "service_healthy"}
    assert services["web"]["depends_on"] == {"postgres": healthy, "redis": healthy}
    for name in ("worker-a", "worker-b", "beat"):
        assert services[name]["depends_on"] == {"postgres": healthy, "redis": healthy, "web": healthy}


def test_environment_wiring(compose):
    for name in ("web", "worker-a", "worker-b", "beat"):
        service = compose["services"][name]
        env = service["environment"]
        assert env["DJANGO_SETTINGS_MODULE"] == "schedweb.settings_production"
        assert env["DATABASE_URL"] == (
            "postgres://schedweb:${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}@postgres:5432/schedweb")
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert "SECRET_KEY" not in env and service["env_file"] == ".env"
    pg = compose["services"]["postgres"]["environment"]
    assert (pg["POSTGRES_USER"], pg["POSTGRES_DB"]) == ("schedweb",) * 2
    # No password in the repository: compose takes it from .env and refuses to start without it.
    assert pg["POSTGRES_PASSWORD"] == "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}"


def test_entrypoint_script_exists_and_is_executable(compose):
    entry = compose["services"]["web"]["entrypoint"][0]
    script = ROOT / entry.removeprefix("/app/")
    assert script.is_file() and script.stat().st_mode & 0o111
