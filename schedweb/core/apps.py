"""Django app configuration of schedweb.core."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The `schedweb.core` app (label `core`): cluster objects and their services."""

    name = "schedweb.core"
    label = "core"
    verbose_name = "Cluster"
    default_auto_field = "django.db.models.BigAutoField"
