"""schedweb.gunicorn_conf: web workers give way to the scheduler (WEB_NICE), bad values refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedweb.gunicorn_conf import web_nice

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")


@pytest.mark.parametrize(("raw", "value"), [(None, 5), ("0", 0), (" 7 ", 7), ("19", 19)])
def test_web_nice_reads_the_setting(raw, value):
    assert web_nice({} if raw is None else {"WEB_NICE": raw}) == value


@pytest.mark.parametrize("raw", ["-1", "20", "abc", "", "2.5"])
def test_a_bad_web_nice_is_refused_with_its_name(raw):
    with pytest.raises(ValueError, match=r"WEB_NICE must be an integer from 0 to 19"):
        web_nice({"WEB_NICE": raw})


def _gunicorn_nice(nice: str) -> tuple[int, int]:
    """(the master's nice, a worker's nice) of a real gunicorn started with the config."""
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTEST_VERSION")}
    # The app prints its own niceness from the worker (a WSGI app module of the test's own).
    env.update(WEB_NICE=nice, PYTHONPATH=str(Path(__file__).parent))
    probe = subprocess.run(
        [str(GUNICORN), "-c", "python:schedweb.gunicorn_conf", "--check-config", "gunicorn_nice_app:app"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    proc = subprocess.Popen([str(GUNICORN), "-c", "python:schedweb.gunicorn_conf", "-w", "1",
                             "-b", "127.0.0.1:0", "gunicorn_nice_app:app"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:  # the worker prints its niceness when it has booted
            if line.startswith("worker nice "):
                return os.getpriority(os.PRIO_PROCESS, proc.pid), int(line.split()[-1])
        raise AssertionError("gunicorn exited before its worker booted")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_workers_run_at_web_nice_and_the_master_does_not():
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base + 3 > 19:
        pytest.skip("this process already runs at the lowest priority")
    assert _gunicorn_nice("3") == (base, base + 3)
    assert _gunicorn_nice("0") == (base, base)


def test_gunicorn_refuses_to_start_with_a_bad_web_nice():
    env = {**os.environ, "WEB_NICE": "high"}
    out = subprocess.run([str(GUNICORN), "-c", "python:schedweb.gunicorn_conf", "--check-config",
                          "schedweb.wsgi"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "WEB_NICE must be an integer from 0 to 19, not 'high'" in out.stdout + out.stderr
