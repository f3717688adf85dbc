"""Playwright against pytest-django's live_server with the demo cluster loaded.

Uses the system chromium (never downloads a browser). live_server makes the tests
transactional; Playwright's sync API runs an event loop, hence DJANGO_ALLOW_ASYNC_UNSAFE.
Pages run under the Content-Security-Policy (schedweb.http.csp), which forbids eval: give
page.wait_for_function a function ("() => ..."), never a bare expression (Playwright would eval it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
PASSWORD = "pw-browser"


@pytest.fixture(scope="session")
def browser() -> Iterator:
    """One headless chromium for the session."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def demo(transactional_db) -> dict:
    """The demo cluster, one scheduling cycle run, and users: staff, a lead of research, a viewer."""
    from django.contrib.auth import get_user_model

    from schedweb.core.models import Queue
    from schedweb.scheduling.cycle import cycle_run
    from schedweb.scheduling.demo import load_demo

    load_demo()
    users = get_user_model().objects
    staff = users.create_user("staff", password=PASSWORD, is_staff=True)
    lead = users.create_user("lead", password=PASSWORD)
    viewer = users.create_user("viewer", password=PASSWORD)
    Queue.objects.get(name="research").admin_users.add(lead)
    run = cycle_run()
    assert not run.errors and not run.skipped
    return {"staff": staff, "lead": lead, "viewer": viewer}


@pytest.fixture
def signed_in(browser, live_server, demo):
    """sign_in(username) -> a Playwright page signed in through the login form."""
    contexts = []

    def sign_in(username: str):
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto(f"{live_server.url}/accounts/login/")
        screenshot(page, "login")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        return page

    yield sign_in
    for context in contexts:
        context.close()


def screenshot(page, name: str) -> None:
    """Save a full-page screenshot under var/screenshots/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
