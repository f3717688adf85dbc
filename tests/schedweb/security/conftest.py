"""Security tests reuse the API test builders (users with roles on team-a, queues via services)."""

from tests.schedweb.api.conftest import client_for, make_user, teams  # noqa: F401
