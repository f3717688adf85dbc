"""Shared pytest setup: fast password hashing, no throttle count carried between tests, and the
Hypothesis profiles that make `make test` deterministic.

Hypothesis profiles (HYPOTHESIS_PROFILE; `make test` sets "deterministic", `make soak` "soak"):
- deterministic: every property test derandomized (the same examples on every run, seeded by
  the test's own code), no example database, no deadline or too-slow health check (timing on a
  loaded 2-core machine is not a property): a red run means the code changed.
- soak: random exploration, SOAK_EXAMPLES_FACTOR (default 5) times each test's example budget,
  failures kept in var/hypothesis/ and replayed first on the next soak. A failure found there
  becomes an explicit @example (or a regression case) next to its property: README "Reliability".
Either profile is applied to every collected property test, over its own @settings and over any
profile a test module loads, so no module can make `make test` random again. A test whose
settings are built at import (stateful machines, schemathesis) wraps them in `profiled()`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = Path(__file__).resolve().parents[1]
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "deterministic")
SOAK_EXAMPLES_FACTOR = int(os.environ.get("SOAK_EXAMPLES_FACTOR", "5"))

settings.register_profile("deterministic", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("soak", derandomize=False, deadline=None, print_blob=True,
                          max_examples=100 * SOAK_EXAMPLES_FACTOR,
                          database=DirectoryBasedExampleDatabase(str(ROOT / "var" / "hypothesis")),
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(PROFILE)


_PROFILED: dict[int, settings] = {}  # settings profiled() made (kept alive, so ids stay unique)


def profiled(own: settings) -> settings:
    """A property test's own settings with the active profile's determinism (or soak budget).
    Idempotent: settings it already made are returned as they are (never scaled twice)."""
    if _PROFILED.get(id(own)) is own:
        return own
    if PROFILE == "soak":
        made = settings(own, derandomize=False, deadline=None, database=settings.default.database,
                        max_examples=own.max_examples * SOAK_EXAMPLES_FACTOR)
    elif PROFILE == "deterministic":
        made = settings(own, derandomize=True, database=None, deadline=None,
                        suppress_health_check=sorted({*own.suppress_health_check, HealthCheck.too_slow},
                                                     key=lambda h: h.value))
    else:
        return own
    _PROFILED[id(made)] = made
    return made


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Apply the profile to every Hypothesis test (their settings were fixed at import, possibly
    under a profile some module loaded); the stateful and schemathesis tests set theirs from
    PROFILE themselves."""
    settings.load_profile(PROFILE)
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if isinstance(own, settings) and getattr(test, "is_hypothesis_test", False):
            test._hypothesis_internal_use_settings = profiled(own)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """PBKDF2 costs ~0.2 s per password; tests do not need slow hashing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _no_bad_token_count_carried(request):
    """Refused API tokens are counted per address for a minute (schedweb.api.throttling): a
    test's 401s must not turn another test's into 429s (the test client is always 127.0.0.1)."""
    yield
    if {"db", "transactional_db", "live_server"} & set(request.fixturenames):
        from schedweb.api.throttling import reset_bad_tokens

        reset_bad_tokens("127.0.0.1")
