"""The WSGI module (what gunicorn loads) hides its start-up objects from the cyclic collector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import gc, json, sys; import schedweb.wsgi as w; "
         "print(json.dumps({'frozen': gc.get_freeze_count(), 'app': type(w.application).__name__, "
         "'views': 'schedweb.api.views.jobs' in sys.modules}))")


def test_wsgi_loads_the_views_and_freezes_what_start_up_made():
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTEST_VERSION")}
    env.update(DJANGO_SETTINGS_MODULE="schedweb.settings", SECRET_KEY="x" * 50, DEBUG="0")
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["app"] == "WSGIHandler"
    assert got["views"] is True  # imported by the URLconf check, so frozen with the rest
    assert got["frozen"] > 50_000  # Django, DRF and the project's modules: ~110,000 objects here
