"""Django app configuration of the audit log."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The `schedweb.audit` app: AuditEntry rows written by the core services."""

    name = "schedweb.audit"
    label = "audit"
    verbose_name = "Audit log"
    default_auto_field = "django.db.models.BigAutoField"
