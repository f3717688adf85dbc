"""The API tokens page (a page of the API app: its model and services): create a token (name,
lifetime; the key shown once), list, revoke. Only the sha256 of a key is stored
(schedweb.api.services). The page answering the create is never cached; reloading it does not
show the key again.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from schedweb.api.models import ApiToken
from schedweb.api.services import token_create, token_revoke
from schedweb.core.forms import add_service_errors

# Token lifetimes offered on the tokens page (days; None = never expires).
TOKEN_EXPIRY_CHOICES = [("7", "7 days"), ("30", "30 days"), ("90", "90 days"), ("365", "1 year"),
                        ("never", "never")]
TOKEN_EXPIRY_DEFAULT = "90"


class TokenCreateForm(forms.Form):
    """A name and a lifetime; the token is made by schedweb.api.services.token_create (the API's)."""

    name = forms.CharField(max_length=100, help_text="What uses it, e.g. the portal or a laptop script.")
    expires = forms.ChoiceField(choices=TOKEN_EXPIRY_CHOICES, initial=TOKEN_EXPIRY_DEFAULT,
                                help_text="After this the key stops working; revoke it sooner below.")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        self.user = user
        self.token: Any = None
        self.key: str | None = None
        super().__init__(*args, **kwargs)

    def clean(self) -> dict[str, Any]:
        """Create the token; the service's ValidationError becomes form errors."""
        data = super().clean()
        if self.errors:
            return data
        days = data["expires"]
        expires = None if days == "never" else timezone.now() + timedelta(days=int(days))
        try:
            self.token, self.key = token_create(user=self.user, name=data["name"], expires=expires)
        except ValidationError as exc:
            add_service_errors(self, exc)
        return data


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
    return render(request, "api/tokens.html", {
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
    return redirect("tokens:list")
