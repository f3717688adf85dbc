"""Shared builders for the truthful-answer tests (issue 16) on the demo cluster (no tests here)."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

from django.contrib.auth import get_user_model
from django.test import Client

GPU = "nvidia.com/gpu"
GPU_POOL = {"node_selector": {"pool": "gpu"},
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]}


def text(html: str) -> str:
    """Visible text, entities decoded, whitespace collapsed."""
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))).strip()


def staff() -> Any:
    """A staff user (created once per test)."""
    users = get_user_model().objects
    return users.filter(username="staff").first() or users.create_user("staff", password="pw", is_staff=True)


def page(url: str) -> str:
    """The page's HTML as a signed-in staff user sees it."""
    client = Client()
    client.force_login(staff())
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def output_map(stored: dict[str, float] | None) -> dict[str, float] | None:
    """Stored units (a QueueSample figure) to the reason details' output units, rounded like them
    (scheduler_core.explain.reason_figures.output_quantities)."""
    if stored is None:
        return None
    out = {}
    for dim, value in stored.items():
        out[dim] = float(round(value)) if dim == "memory" else round(value / 1000, 3)
    return out
