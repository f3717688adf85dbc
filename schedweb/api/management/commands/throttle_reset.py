"""`manage.py throttle_reset --username NAME --ip ADDR`: lift login locks and bad-token counts."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from schedweb.http import login_throttle


class Command(BaseCommand):
    """Forget the failed logins (and so the lock) of usernames and addresses, and the failed API
    token attempts counted for the addresses."""

    help = ("Lift login throttling: forget the failed logins of --username (any number) and of "
            "--ip, and the failed API token attempts of --ip.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", action="append", default=[], metavar="NAME",
                            help="a username whose failed logins to forget (repeatable)")
        parser.add_argument("--ip", action="append", default=[], metavar="ADDR",
                            help="a client address whose failed logins and tokens to forget (repeatable)")

    def handle(self, *args, **options) -> None:
        usernames = [u for u in options["username"] if u.strip()]
        ips = [ip.strip() for ip in options["ip"] if ip.strip()]
        if not usernames and not ips:
            raise CommandError("name at least one --username or --ip")
        login_throttle.reset(usernames=usernames, ips=ips)
        if ips and "schedweb.api" in settings.INSTALLED_APPS:  # the API app is optional
            from schedweb.api.throttling import reset_bad_tokens

            for ip in ips:
                reset_bad_tokens(ip)
        for name in usernames:
            self.stdout.write(f"login throttle reset for username {name!r}")
        for ip in ips:
            self.stdout.write(f"login and API token throttles reset for address {ip}")
