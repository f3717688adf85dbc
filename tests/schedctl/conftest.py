"""A live test server with a token, and schedctl run in-process against it (main(argv))."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from schedctl import config
from tests.schedctl.support import Server


@pytest.fixture
def cli_env(monkeypatch, tmp_path):
    """No SCHEDCTL_* variable or ~/.config/schedctl file of the machine reaches schedctl."""
    for name in (config.SERVER_ENV, config.TOKEN_ENV, config.CONFIG_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def server(live_server, cli_env, capsys) -> Server:
    """A staff user `ops` with an API token on the live server (API body caches emptied first)."""
    from schedweb.api import cache as api_cache
    from schedweb.api.services import token_create

    api_cache.clear_local()
    user = get_user_model().objects.create_user(username="ops", password="pw", is_staff=True)
    _, key = token_create(user=user, name="cli")
    yield Server(live_server.url, key, capsys)
    api_cache.clear_local()
