"""Real processes for the reliability tests: a Celery worker with beat, a gunicorn server, and the
local PostgreSQL and Redis services stopped and restarted on purpose (always restarted after).

Processes run in their own session (process group) and are killed by group, never by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import redis
import requests
from django.conf import settings
from django.db import connections

from tests.schedweb.scheduling.conftest import test_database_url

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _pg_version() -> str:
    """The newest installed PostgreSQL major version (the cluster `main` of it)."""
    if not os.path.isdir("/etc/postgresql"):
        return "15"
    versions = [v for v in os.listdir("/etc/postgresql") if v.isdigit()]
    return str(max(int(v) for v in versions)) if versions else "15"


PG_VERSION = _pg_version()
PG_CTL = ["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, "main"]
# The machine's own command (docs: machines/python-svc.md), so Redis comes back exactly as it was.
REDIS_START = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379",
               "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis",
               "--logfile", "/var/log/redis/ci.log"]
SERVICE_TIMEOUT = 60.0


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    """Poll `predicate` until it is true or `timeout` seconds pass; returns its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment of a server/worker on the test database, production-like (DEBUG off)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_VERSION", "PYTEST_CURRENT_TEST")}
    env.update(DJANGO_SETTINGS_MODULE="schedweb.settings", DATABASE_URL=test_database_url(),
               REDIS_URL=settings.REDIS_URL or "", DEBUG="0", SECRET_KEY="reliability-" + "k" * 50,
               ALLOWED_HOSTS="127.0.0.1,localhost", SIMULATED_AGENT="1", SCHEDULE_PERIOD="0.5",
               API_THROTTLE_USER="1000000/minute", LOG_LEVEL="WARNING")
    env.update(extra)
    return env


@dataclass
class Proc:
    """A started process group with its log file."""

    name: str
    popen: subprocess.Popen
    log: Path
    stop_signal: int = signal.SIGTERM

    def alive(self) -> bool:
        """True while the group leader runs."""
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the whole group (worker and its beat child) and reap the leader on SIGKILL."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, sig)
        if sig == signal.SIGKILL:
            self.popen.wait()

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the group, SIGKILL it if it lingers."""
        if self.alive():
            self.kill(self.stop_signal)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=timeout)
        self.kill(signal.SIGKILL)  # stray children of a group whose leader exited

    def tail(self, chars: int = 3000) -> str:
        """The end of the log (for assertion messages)."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


@dataclass
class Processes:
    """Starts workers and servers and stops every one of them at teardown."""

    log_dir: Path
    started: list[Proc] = field(default_factory=list)

    def spawn(self, name: str, argv: list[str], env: dict[str, str],
              stop_signal: int = signal.SIGTERM) -> Proc:
        """Start `argv` in a new session, output to <log_dir>/<name>.log."""
        log = self.log_dir / f"{name}.log"
        popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log.open("a"), stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        proc = Proc(name, popen, log, stop_signal)
        self.started.append(proc)
        return proc

    def worker(self, name: str = "worker", *, beat: bool = True, **env: str) -> Proc:
        """`celery worker -B --pool=solo` (one cycle at a time per worker, as deployed)."""
        argv = [str(BIN / "celery"), "-A", "schedweb", "worker", "--pool=solo", "--loglevel=WARNING",
                "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        if beat:
            argv += ["-B", "--schedule", str(self.log_dir / f"{name}-beat-schedule")]
        return self.spawn(name, argv, subprocess_env(**env))  # SIGTERM: warm shutdown

    def server(self, name: str = "server", *, workers: int = 2, threads: int = 8,
               **env: str) -> tuple[Proc, str]:
        """gunicorn (gthread) on a free port; returns it and its base URL once /healthz answers."""
        port = free_port()
        argv = [str(BIN / "gunicorn"), "schedweb.wsgi", "-c", "python:schedweb.gunicorn_conf",
                "-b", f"127.0.0.1:{port}", "-w", str(workers),
                "-k", "gthread", "--threads", str(threads), "--timeout", "120", "--graceful-timeout", "5",
                "--preload"]  # Django imported once, then forked: half the start-up CPU on 2 cores
        proc = self.spawn(name, argv, subprocess_env(**env), signal.SIGINT)  # quick shutdown
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return requests.get(f"{url}/healthz", timeout=2).status_code in (200, 503)
            except requests.RequestException:
                return False

        assert wait_for(up, 60), proc.tail()
        return proc, url

    def stop_all(self, timeout: float = 15.0) -> None:
        """Stop every process started here: all signalled at once, then waited for (SIGKILL after)."""
        for proc in self.started:
            if proc.alive():
                proc.kill(proc.stop_signal)
        deadline = time.monotonic() + timeout
        for proc in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            proc.kill(signal.SIGKILL)


# --- PostgreSQL ---------------------------------------------------------------------------------

def pg_ready() -> bool:
    """True when the test database accepts a query."""
    try:
        with psycopg.connect(test_database_url(), connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def pg_start() -> None:
    """Start the cluster (if stopped) and wait until it answers; retried, since the start may race."""
    for _ in range(5):
        if pg_ready():
            return
        subprocess.run([*PG_CTL, "start"], capture_output=True, timeout=SERVICE_TIMEOUT)
        if wait_for(pg_ready, 20, 0.25):
            return
    raise RuntimeError("PostgreSQL did not come back")


@contextlib.contextmanager
def postgres_down() -> Iterator[None]:
    """Stop PostgreSQL (fast mode: sessions are terminated) for the block; always started again."""
    connections.close_all()
    try:
        subprocess.run([*PG_CTL, "stop", "-m", "fast"], check=True, capture_output=True,
                       timeout=SERVICE_TIMEOUT)
        yield
    finally:
        pg_start()
        connections.close_all()  # our own connection died with the server


# --- Redis --------------------------------------------------------------------------------------

def redis_ready() -> bool:
    """True when Redis answers PING (a raw socket: redis-py would retry with back-off for seconds)."""
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def redis_start() -> None:
    """Start Redis with the machine's command and wait until it answers."""
    for _ in range(5):
        if redis_ready():
            return
        Path("/var/lib/redis").mkdir(parents=True, exist_ok=True)
        Path("/var/log/redis").mkdir(parents=True, exist_ok=True)
        subprocess.run(REDIS_START, capture_output=True, timeout=SERVICE_TIMEOUT)
        if wait_for(redis_ready, 10, 0.2):
            return
    raise RuntimeError("Redis did not come back")


@contextlib.contextmanager
def redis_down() -> Iterator[None]:
    """Shut Redis down (it keeps nothing on disk) for the block; always started again."""
    try:
        # A raw command: redis-py would retry the closed connection with back-off for seconds.
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", 6379), timeout=5) as sock:
            sock.sendall(b"SHUTDOWN NOSAVE\r\n")
            sock.recv(64)
        assert wait_for(lambda: not redis_ready(), 10), "Redis did not stop"
        yield
    finally:
        redis_start()


def clear_celery_queue() -> None:
    """Drop cycle messages left in the broker by earlier runs (Celery's default queue only)."""
    if settings.REDIS_URL:
        redis.Redis.from_url(settings.REDIS_URL).delete("celery", "unacked", "unacked_index")
