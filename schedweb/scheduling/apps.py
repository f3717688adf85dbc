"""Django app configuration of schedweb.scheduling."""

from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    """The `schedweb.scheduling` app (label `scheduling`): cycles, queue samples, reason history."""

    name = "schedweb.scheduling"
    label = "scheduling"
    verbose_name = "Scheduling"
    default_auto_field = "django.db.models.BigAutoField"
