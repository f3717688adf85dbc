"""Django app configuration of the REST API."""

from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The `schedweb.api` app: API tokens (its only model), views and schema."""

    name = "schedweb.api"
    label = "api"
    verbose_name = "REST API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Register the schema extensions (drf-spectacular discovers them by import), revoke a
        user's tokens when their password changes (schedweb.api.token_revocation), and prebuild
        readers' bodies after each scheduling cycle (schedweb.api.prebuild)."""
        from schedweb.api import prebuild, schema, token_revocation  # noqa: F401
        from schedweb.scheduling.signals import cycle_finished

        cycle_finished.connect(_after_cycle, dispatch_uid="schedweb.api.prebuild")


def _after_cycle(run: object = None, **_: object) -> None:
    from schedweb.api import prebuild

    prebuild.record(run)  # builds, then adds its time to the cycle's timing
