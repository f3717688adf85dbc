"""`manage.py load_demo [--if-empty]`: load the demo cluster (idempotent)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from schedweb.scheduling.demo import database_is_empty, load_demo


class Command(BaseCommand):
    """Load the demo queues, nodes, jobs and scheduler configuration through the services."""

    help = "Load the demo cluster; objects that already exist are left alone."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--if-empty", action="store_true",
                            help="Do nothing unless the database has no queues, nodes or jobs.")

    def handle(self, *args, **options) -> None:
        if options["if_empty"] and not database_is_empty():
            self.stdout.write("Database not empty: demo not loaded.")
            return
        created = load_demo()
        summary = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in created.items())
        self.stdout.write(f"Demo loaded: created {summary}." if any(created.values())
                          else "Demo already loaded: nothing to do.")
