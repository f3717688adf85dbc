"""API tokens page: create one (name, lifetime; the key shown once), list, revoke.

The writes are the API's (schedweb.api.services: only the sha256 of a key is stored). The page
answering the create shows the key and is never cached; reloading it does not show it again.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from schedweb.api.models import ApiToken
from schedweb.api.services import token_revoke
from schedweb.dashboard.forms import TokenCreateForm

TOKENS_SHOWN = 100  # newest first; revoked ones stay listed (as in GET /api/v1/tokens/)


def _rows(user) -> list[dict]:
    now = timezone.now()
    rows = []
    for token in ApiToken.objects.filter(user=user)[:TOKENS_SHOWN]:
        if token.revoked is not None:
            status = "revoked"
        elif token.expires is not None and token.expires <= now:
            status = "expired"
        else:
            status = "active"
        rows.append({"token": token, "status": status})
    return rows


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    """The user's tokens and the create form; a successful POST answers with the new key, once."""
    form = TokenCreateForm(request.POST or None, user=request.user)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            created = {"token": form.token, "key": form.key}
            form = TokenCreateForm(user=request.user)
        else:
            status = 400
    return render(request, "dashboard/tokens.html", {
        "page": "tokens", "form": form, "created": created, "rows": _rows(request.user),
        "tree_url": request.build_absolute_uri(reverse("api:queue-tree")),
        "jobs_url": request.build_absolute_uri(reverse("api:job-list")),
    }, status=status)


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke one of the user's own tokens (another user's is a 404); it stops working at once."""
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    if token.revoked is None:
        token_revoke(token=token)
        messages.success(request, f"Token {token.name} ({token.prefix}...) is revoked: "
                                  "its key no longer works.")
    return redirect("dashboard:tokens")
