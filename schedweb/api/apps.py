"""Django app configuration of the REST API."""

from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The `schedweb.api` app: API tokens (its only model), views and schema."""

    name = "schedweb.api"
    label = "api"
    verbose_name = "REST API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the schema extensions (drf-spectacular discovers them by import)."""
        from schedweb.api import schema  # noqa: F401
