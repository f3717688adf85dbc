"""Django app configuration of schedweb.http."""

from django.apps import AppConfig


class HttpConfig(AppConfig):
    """The `schedweb.http` app (label `http`): middleware and throttles, no models."""

    name = "schedweb.http"
    label = "http"
    verbose_name = "HTTP"

    def ready(self) -> None:
        """Connect the login-throttle signal receivers (counting failed logins)."""
        from schedweb.http import login_throttle  # noqa: F401
