"""`manage.py users ...`: create, list and manage accounts and their queue roles from a shell.

    users create NAME [--email E] [--staff] [--superuser] [--password-stdin]
                 [--queue-admin Q]... [--submitter Q]... [--group G]...
    users grant NAME [--staff] [--queue-admin Q]... [--submitter Q]... [--group G]...
    users revoke NAME [--staff] [--queue-admin Q]... [--submitter Q]... [--group G]...
    users set-password NAME [--password-stdin]
    users deactivate NAME
    users list

Queue roles are the queue's ACL (`admin_users`, `submitter_users`), changed through
`services.queue_update` (audited, as "system"); a role on a parent queue covers its subtree.
Without --password-stdin a random password is generated and printed once. Bad input is one
line on stderr and exit 2.
"""

from __future__ import annotations

import secrets
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from schedweb.core import services
from schedweb.core.models import Queue

ROLES = (("queue_admin", "admin_users"), ("submitter", "submitter_users"))


def fail(message: str) -> CommandError:
    """The command's error for bad input: printed on stderr, exit status 2."""
    return CommandError(message, returncode=2)


class Command(BaseCommand):
    """Accounts and queue roles without the admin site (works wherever manage.py does)."""

    help = "Create, list and manage users and their queue roles (admin, submitter) and groups."
    stealth_options = ("stdin",)  # tests pass the password stream as call_command(..., stdin=...)

    def add_arguments(self, parser: Any) -> None:
        """One subcommand per action; role options repeat."""
        sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = sub.add_parser("create", help="create a user (random password printed once)")
        create.add_argument("--email", default="")
        create.add_argument("--superuser", action="store_true", help="staff with every permission")
        self._password_option(create)
        for name in ("grant", "revoke"):
            self._role_options(sub.add_parser(name, help=f"{name} staff, queue roles or group membership"))
        self._role_options(create)
        self._password_option(sub.add_parser("set-password", help="set a new password (random if not given)"))
        sub.add_parser("deactivate", help="refuse the user's sign-in and tokens").add_argument("username")
        sub.add_parser("list", help="every user with staff flag, groups and queue roles")

    @staticmethod
    def _password_option(parser: Any) -> None:
        if not any(a.dest == "username" for a in parser._actions):
            parser.add_argument("username")
        parser.add_argument("--password-stdin", action="store_true",
                            help="read the password from the first line of stdin (else a random one)")

    @staticmethod
    def _role_options(parser: Any) -> None:
        if not any(a.dest == "username" for a in parser._actions):
            parser.add_argument("username")
        parser.add_argument("--staff", action="store_true",
                            help="manages nodes, quotas and the scheduler config")
        parser.add_argument("--queue-admin", action="append", default=[], metavar="QUEUE",
                            help="administers QUEUE and its subtree (repeatable)")
        parser.add_argument("--submitter", action="append", default=[], metavar="QUEUE",
                            help="submits jobs to QUEUE's leaf queues (repeatable)")
        parser.add_argument("--group", action="append", default=[], metavar="GROUP",
                            help="member of GROUP, created when missing (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        """Dispatch to the subcommand."""
        action = options["action"]
        if action == "list":
            self._list()
            return
        with transaction.atomic():
            getattr(self, "_" + action.replace("-", "_"))(options)

    # -- subcommands ------------------------------------------------------------------------------
    def _create(self, options: dict[str, Any]) -> None:
        users = get_user_model().objects
        name = options["username"]
        if not name.strip() or users.filter(username=name).exists():
            raise fail(f"user {name!r} already exists (use grant or set-password)" if name.strip()
                       else "the username is empty")
        queues = self._queues(options)
        user = users.create_user(username=name, email=options["email"])
        password = self._new_password(user, options)
        user.is_staff = options["staff"] or options["superuser"]
        user.is_superuser = options["superuser"]
        user.save()
        self._apply(user, options, queues, grant=True)
        self.stdout.write(f"created user {name}{self._password_note(options, password)}")

    def _grant(self, options: dict[str, Any]) -> None:
        self._change_roles(options, grant=True)

    def _revoke(self, options: dict[str, Any]) -> None:
        self._change_roles(options, grant=False)

    def _new_password(self, user: Any, options: dict[str, Any]) -> str:
        if options["password_stdin"]:
            password = (options.get("stdin") or sys.stdin).readline().rstrip("\r\n")
        else:
            password = secrets.token_urlsafe(12)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise fail("password refused: " + " ".join(exc.messages)) from None
        user.set_password(password)
        return password

    def _set_password(self, options: dict[str, Any]) -> None:
        user = self._user(options["username"])
        password = self._new_password(user, options)
        user.save()
        self.stdout.write(f"password of {user.username} set{self._password_note(options, password)}")

    def _deactivate(self, options: dict[str, Any]) -> None:
        user = self._user(options["username"])
        user.is_active = False
        user.save(update_fields=["is_active"])
        self.stdout.write(f"deactivated user {user.username}: sign-in and API tokens refused")

    def _list(self) -> None:
        rows = [("USERNAME", "ACTIVE", "STAFF", "GROUPS", "QUEUE-ADMIN", "SUBMITTER")]
        users = get_user_model().objects.order_by("username").prefetch_related(
            "groups", "admin_of_queues", "submitter_of_queues")
        for user in users:
            rows.append((user.username, "yes" if user.is_active else "no",
                         "superuser" if user.is_superuser else "yes" if user.is_staff else "no",
                         ",".join(sorted(g.name for g in user.groups.all())) or "-",
                         ",".join(sorted(q.name for q in user.admin_of_queues.all())) or "-",
                         ",".join(sorted(q.name for q in user.submitter_of_queues.all())) or "-"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())

    # -- helpers ----------------------------------------------------------------------------------
    def _change_roles(self, options: dict[str, Any], *, grant: bool) -> None:
        user = self._user(options["username"])
        queues = self._queues(options)
        if not (options["staff"] or options["group"] or any(queues.values())):
            raise fail("name at least one of --staff, --queue-admin, --submitter, --group")
        if options["staff"]:
            user.is_staff = grant
            user.save(update_fields=["is_staff"])
        self._apply(user, options, queues, grant=grant)
        self.stdout.write(f"{'granted' if grant else 'revoked'}: {self._summary(options)} "
                          f"{'to' if grant else 'from'} {user.username}")

    def _queues(self, options: dict[str, Any]) -> dict[str, list[Queue]]:
        """The queues each role option names (all must exist), by role."""
        out: dict[str, list[Queue]] = {}
        for option, _ in ROLES:
            found = []
            for name in options[option]:
                queue = Queue.objects.filter(name=name).first()
                if queue is None:
                    raise fail(f"--{option.replace('_', '-')} {name}: no such queue")
                found.append(queue)
            out[option] = found
        return out

    @staticmethod
    def _apply(user: Any, options: dict[str, Any], queues: dict[str, list[Queue]], *, grant: bool) -> None:
        for option, field in ROLES:
            for queue in queues[option]:
                members = [u for u in getattr(queue, field).all() if u.pk != user.pk]
                services.queue_update(queue=queue, **{field: [*members, user] if grant else members})
        for name in options["group"]:
            if not name.strip():
                raise fail("--group: the group name is empty")
            if grant:
                user.groups.add(Group.objects.get_or_create(name=name)[0])
            else:
                user.groups.remove(*Group.objects.filter(name=name))

    @staticmethod
    def _user(name: str) -> Any:
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise fail(f"no user {name!r}")
        return user

    @staticmethod
    def _summary(options: dict[str, Any]) -> str:
        parts = ["staff"] if options["staff"] else []
        parts += [f"queue-admin {q}" for q in options["queue_admin"]]
        parts += [f"submitter {q}" for q in options["submitter"]]
        parts += [f"group {g}" for g in options["group"]]
        return ", ".join(parts)

    @staticmethod
    def _password_note(options: dict[str, Any], password: str) -> str:
        return "" if options["password_stdin"] else f"; password: {password} (shown once)"
