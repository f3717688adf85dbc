"""The API tokens page in a browser, on a phone: reach it through the folded menu, create a token,
see its key once, call the API with it, revoke it (the key is then refused)."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _api_status(base: str, key: str) -> int:
    request = urllib.request.Request(f"{base}/api/v1/queues/tree/", headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (the live server)
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_create_see_once_use_and_revoke(signed_in, live_server):
    from schedweb.api.models import ApiToken

    page = signed_in("viewer")
    page.set_viewport_size({"width": 390, "height": 844})
    page.click("#menu-toggle")
    page.click("#site-nav a:text-is('API tokens')")
    page.wait_for_url(f"{live_server.url}/tokens/")
    assert page.inner_text("#no-tokens") == "You have no token yet."
    page.fill("#id_name", "portal")
    page.select_option("#id_expires", "30")
    page.click("#token-create-form button[type=submit]")
    page.wait_for_selector("#new-key")
    key = page.inner_text("#new-key")
    assert re.fullmatch(r"swt_[\w-]{43}", key)
    first_call = f'curl -H "Authorization: Token {key}" {live_server.url}/api/v1/queues/tree/'
    assert page.inner_text("#first-call") == first_call
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "tokens-created-390")
    assert _api_status(live_server.url, key) == 200
    # Shown once: the page read again lists the token by its prefix only.
    page.goto(f"{live_server.url}/tokens/")
    assert key not in page.content()
    row = page.locator("tr[data-token=portal]")
    assert row.get_attribute("data-status") == "active"
    assert row.locator("code").inner_text() == ApiToken.objects.get().prefix + "\u2026"
    # Revoke, behind its confirmation step.
    row.locator("summary:has-text('Revoke')").click()
    row.locator("button:text-is('Yes, revoke it')").click()
    page.wait_for_selector(".messages li")
    assert "is revoked: its key no longer works." in page.inner_text(".messages li")
    assert page.locator("tr[data-token=portal]").get_attribute("data-status") == "revoked"
    screenshot(page, "tokens-revoked-390")
    assert _api_status(live_server.url, key) == 401


def test_a_duplicate_name_is_a_form_error(signed_in, live_server):
    page = signed_in("viewer")
    page.goto(f"{live_server.url}/tokens/")
    for _ in range(2):
        page.fill("#id_name", "ci")
        page.click("#token-create-form button[type=submit]")
        page.wait_for_load_state()
    assert page.inner_text("#token-create .errorlist") == "You already have an active token named 'ci'."
    assert page.locator("#new-key").count() == 0
    screenshot(page, "tokens-duplicate")
