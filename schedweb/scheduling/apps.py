"""Django app configuration of schedweb.scheduling."""

from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    """The `schedweb.scheduling` app (label `scheduling`): cycles, queue samples, reason history."""

    name = "schedweb.scheduling"
    label = "scheduling"
    verbose_name = "Scheduling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Every scheduling session of this process gets the configured work budget per job; each
        cycle prerenders /metrics (schedweb.scheduling.metrics_body)."""
        from django.conf import settings

        from scheduler_core.framework.work_budget import set_default_budget
        from schedweb.scheduling import metrics_body
        from schedweb.scheduling.signals import cycle_finished

        set_default_budget(getattr(settings, "SCHEDULER_WORK_BUDGET", None))
        cycle_finished.connect(metrics_body.after_cycle, dispatch_uid="schedweb.scheduling.metrics_body")
