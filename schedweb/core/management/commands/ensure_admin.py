"""`manage.py ensure_admin`: the local `admin` superuser with a password kept in var/."""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    """Create `admin` once with a random password stored in var/admin-password.txt; print it."""

    help = "Ensure the admin superuser exists and print its password (from var/admin-password.txt)."

    def add_arguments(self, parser) -> None:
        default = Path(settings.BASE_DIR) / "var" / "admin-password.txt"
        parser.add_argument("--password-file", default=str(default))
        parser.add_argument("--username", default="admin")

    def handle(self, *args, **options) -> None:
        path = Path(options["password_file"])
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists() or not path.read_text().strip()
        if fresh:
            path.write_text(secrets.token_urlsafe(16) + "\n")
            path.chmod(0o600)
        password = path.read_text().strip()
        users = get_user_model().objects
        user = users.filter(username=options["username"]).first()
        if user is None:
            users.create_superuser(username=options["username"], email="", password=password)
        elif fresh or not user.check_password(password):
            # The file is the source of truth: keep the account's password in step with it.
            user.set_password(password)
            user.is_staff = user.is_superuser = user.is_active = True
            user.save()
        self.stdout.write(f"Admin login: {options['username']} / {password}  (password in {path})")
