"""`manage.py users` (accounts and queue roles from a shell), `scripts/manage.sh` (the `make run`
environment outside `make run`) and `scripts/run.sh`'s HOST/PORT checks."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from schedweb.audit.models import AuditEntry
from schedweb.core import services
from schedweb.core.models import Queue

ROOT = Path(__file__).resolve().parents[3]
User = get_user_model()


def users(*args: str, stdin: str | None = None) -> str:
    out = StringIO()
    extra = {"stdin": StringIO(stdin)} if stdin is not None else {}
    call_command("users", *args, stdout=out, **extra)
    return out.getvalue()


@pytest.fixture
def tree(db):
    services.queue_create(name="research")
    services.queue_create(name="nlp", parent="research")
    services.queue_create(name="vision", parent="research")


def roles(name: str) -> tuple[list[str], list[str], list[str]]:
    user = User.objects.get(username=name)
    return (sorted(q.name for q in user.admin_of_queues.all()),
            sorted(q.name for q in user.submitter_of_queues.all()), sorted(g.name for g in user.groups.all()))


def test_create_submitter_with_a_group_and_a_generated_password(tree):
    out = users("create", "alice", "--submitter", "nlp", "--group", "ml")
    password = out.split("password: ")[1].split(" ")[0]
    assert out == f"created user alice; password: {password} (shown once)\n" and len(password) == 16
    alice = User.objects.get(username="alice")
    assert alice.check_password(password) and (alice.is_staff, alice.is_superuser, alice.is_active) == (
        False, False, True)
    assert roles("alice") == ([], ["nlp"], ["ml"])
    # Through the service: the ACL change is in the audit log, made by "system".
    entry = AuditEntry.objects.get(object_type="queue", object_key="nlp", action="update")
    assert entry.actor_name == "system"


def test_create_queue_admin_staff_with_password_from_stdin(tree):
    out = users("create", "bob", "--queue-admin", "research", "--staff", "--password-stdin",
                stdin="correct horse battery\n")
    assert out == "created user bob\n"
    bob = User.objects.get(username="bob")
    assert bob.check_password("correct horse battery") and bob.is_staff and not bob.is_superuser
    assert roles("bob") == (["research"], [], [])


def test_grant_revoke_set_password_deactivate_and_list(tree):
    users("create", "carol", "--submitter", "nlp")
    Queue.objects.get(name="nlp").submitter_users.add(User.objects.create(username="dave"))
    assert users("grant", "carol", "--queue-admin", "vision", "--submitter", "vision", "--group", "cv") == (
        "granted: queue-admin vision, submitter vision, group cv to carol\n")
    assert users("revoke", "carol", "--submitter", "nlp") == "revoked: submitter nlp from carol\n"
    assert roles("carol") == (["vision"], ["vision"], ["cv"])
    nlp_submitters = Queue.objects.get(name="nlp").submitter_users.values_list("username", flat=True)
    assert sorted(nlp_submitters) == ["dave"]
    assert users("set-password", "carol", "--password-stdin", stdin="a new long passphrase\n") == (
        "password of carol set\n")
    assert User.objects.get(username="carol").check_password("a new long passphrase")
    assert users("deactivate", "carol") == "deactivated user carol: sign-in and API tokens refused\n"
    assert users("list").splitlines() == [
        "USERNAME  ACTIVE  STAFF  GROUPS  QUEUE-ADMIN  SUBMITTER",
        "carol     no      no     cv      vision       vision",
        "dave      yes     no     -       -            nlp",
    ]


@pytest.mark.parametrize(("args", "stdin", "message"), [
    (["create", "alice", "--submitter", "nope"], None, "--submitter nope: no such queue"),
    (["create", "alice", "--queue-admin", "nope"], None, "--queue-admin nope: no such queue"),
    (["create", "taken"], None, "user 'taken' already exists (use grant or set-password)"),
    (["create", "alice", "--password-stdin"], "short\n",
     "password refused: This password is too short. It must contain at least 8 characters."),
    (["grant", "ghost", "--staff"], None, "no user 'ghost'"),
    (["grant", "taken"], None, "name at least one of --staff, --queue-admin, --submitter, --group"),
    (["deactivate", "ghost"], None, "no user 'ghost'"),
])
def test_bad_input_is_one_message_and_exit_2(tree, args, stdin, message):
    User.objects.create(username="taken")
    with pytest.raises(CommandError) as caught:
        users(*args, stdin=stdin)
    assert (str(caught.value), caught.value.returncode) == (message, 2)
    assert not User.objects.filter(username="alice").exists()  # nothing half-made


def _env(**extra: str) -> dict[str, str]:
    """The environment of a fresh shell: no test settings, no secret key, no DEBUG."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTEST_VERSION", "DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "REDIS_URL"}}
    return {**env, **extra}


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="needs the project's .venv")
def test_manage_sh_runs_users_where_bare_manage_py_fails(tmp_path):
    """The issue: createsuperuser outside `make run` failed on SECRET_KEY. scripts/manage.sh
    supplies `make run`'s environment, so the documented commands work on a fresh database."""
    env = _env(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    bare = subprocess.run([sys.executable, "manage.py", "users", "list"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert bare.returncode != 0 and "SECRET_KEY must be set when DEBUG is off" in bare.stderr
    for args in (["migrate", "-v0"], ["load_demo"]):
        subprocess.run(["scripts/manage.sh", *args], cwd=ROOT, env=env, check=True, capture_output=True,
                       timeout=600)
    made = subprocess.run(["scripts/manage.sh", "users", "create", "alice", "--submitter", "nlp"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and made.stdout.startswith("created user alice; password: ")
    listed = subprocess.run(["scripts/manage.sh", "users", "list"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.stdout.splitlines()[1].split() == ["alice", "yes", "no", "-", "-", "nlp"]


@pytest.mark.parametrize(("host", "port", "message"), [
    ("127.0.0.1", "80a", "run: PORT must be a number from 1 to 65535, not '80a'"),
    ("127.0.0.1", "0", "run: PORT must be a number from 1 to 65535, not '0'"),
    ("127.0.0.1", "70000", "run: PORT must be a number from 1 to 65535, not '70000'"),
    ("bad host;", "8000", "run: HOST must be a host name, an IPv4 address or a bracketed IPv6 address "
                          "([::1]), not 'bad host;'"),
])
def test_run_sh_refuses_a_bad_port_or_host_before_starting(host, port, message):
    done = subprocess.run(["scripts/run.sh"], cwd=ROOT, env=_env(HOST=host, PORT=port), capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr.strip(), done.stdout) == (2, message, "")


def test_groups_are_created_once(tree):
    users("create", "erin", "--group", "ml")
    users("create", "frank", "--group", "ml")
    assert Group.objects.filter(name="ml").count() == 1
