"""Production settings: the environment-driven base plus the `manage.py check --deploy` hardening.

Requires SECRET_KEY and ALLOWED_HOSTS; TLS is expected to terminate at a proxy that sets
X-Forwarded-Proto (SECURE_PROXY_SSL_HEADER).
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from schedweb.settings import *  # noqa: F403
from schedweb.settings import env_bool, env_list

if not os.environ.get("SECRET_KEY"):
    raise ImproperlyConfigured("SECRET_KEY must be set in production.")
if not os.environ.get("ALLOWED_HOSTS"):
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set in production (comma-separated).")

DEBUG = False
# Container healthchecks probe http://127.0.0.1:8000/healthz from inside the container.
ALLOWED_HOSTS = list(dict.fromkeys(env_list("ALLOWED_HOSTS")
                                   + env_list("PROBE_HOSTS", "127.0.0.1,localhost")))
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# /healthz is probed over plain HTTP inside the compose network.
SECURE_REDIRECT_EXEMPT = [r"^healthz/?$"]
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
# Pages send the CSRF token from the DOM (hx-headers / {% csrf_token %}), never from the cookie.
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = int(os.environ.get("SESSION_COOKIE_AGE", str(60 * 60 * 12)))
X_FRAME_OPTIONS = "DENY"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
