"""`manage.py scheduler_conf [--activate NAME]`: show the active scheduler configuration, or
activate one of the named defaults (schedweb.scheduling.default_conf.NAMED_CONFS):
`schedweb-default` (hierarchical capacity, what the demo starts with) or `volcano-default`
(Volcano's own default, flat proportion). Any other YAML: the scheduler-config API or the admin.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from schedweb.core import services
from schedweb.core.models import SchedulerConfig
from schedweb.scheduling.default_conf import NAMED_CONFS


class Command(BaseCommand):
    """Print the active configuration's version and name, or activate a named default."""

    help = "Show the active scheduler configuration, or activate a named one (--activate NAME)."

    def add_arguments(self, parser: Any) -> None:
        """--activate NAME (a choice of the named configurations)."""
        parser.add_argument("--activate", choices=sorted(NAMED_CONFS), metavar="NAME",
                            help=f"activate one of: {', '.join(sorted(NAMED_CONFS))} (a new version)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Activate (when asked), then describe what is active."""
        if options["activate"]:
            yaml, comment = NAMED_CONFS[options["activate"]]
            config = services.scheduler_config_activate(yaml=yaml, comment=comment)
            self.stdout.write(f"activated {options['activate']} as version {config.version}")
            return
        config = SchedulerConfig.objects.filter(active=True).first()
        if config is None:
            self.stdout.write("no active configuration: the scheduler uses schedweb-default")
            return
        name = next((n for n, (yaml, _) in sorted(NAMED_CONFS.items()) if yaml == config.yaml), "custom")
        self.stdout.write(f"active: version {config.version} ({name}) {config.comment}".rstrip())
