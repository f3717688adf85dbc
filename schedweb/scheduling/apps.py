"""Django app configuration of schedweb.scheduling."""

from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    """The `schedweb.scheduling` app (label `scheduling`): cycles, queue samples, reason history."""

    name = "schedweb.scheduling"
    label = "scheduling"
    verbose_name = "Scheduling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Every scheduling session of this process gets the configured work budget per job."""
        from django.conf import settings

        from scheduler_core.framework.work_budget import set_default_budget

        set_default_budget(getattr(settings, "SCHEDULER_WORK_BUDGET", None))
