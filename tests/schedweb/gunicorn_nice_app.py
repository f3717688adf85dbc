"""A WSGI app for test_gunicorn_conf: its worker prints its own niceness once booted."""

import os
import sys

print(f"worker nice {os.getpriority(os.PRIO_PROCESS, 0)}", flush=True)
sys.stdout.flush()


def app(environ, start_response):  # pragma: no cover - never requested
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
