"""A user's API tokens are revoked when their password changes, whatever the path (the admin,
`manage.py users set-password`, a password form, `set_password()` then `save()`): a password
reset must also shut out whoever held a key. Sessions need nothing: Django's session hash is
derived from the password hash.

The user model's pre_save compares the password hash with the stored one (one indexed read per
save, skipped for saves that name their fields without `password`, as a login's last_login
update does); post_save then revokes every active token of the user, as token_revoke does (the
rows stay for the audit trail).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver
from django.utils import timezone

from schedweb.api.models import ApiToken


@receiver(pre_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="schedweb_token_password_check")
def _note_password_change(sender: Any, instance: Any, raw: bool = False, update_fields: Any = None,
                          **kwargs: Any) -> None:
    if raw or instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = sender._default_manager.filter(pk=instance.pk).values_list("password", flat=True).first()
    instance._password_changed = stored is not None and stored != instance.password


@receiver(post_save, sender=settings.AUTH_USER_MODEL, dispatch_uid="schedweb_token_password_revoke")
def _revoke_tokens_on_password_change(sender: Any, instance: Any, created: bool = False,
                                      **kwargs: Any) -> None:
    if created or not getattr(instance, "_password_changed", False):
        return
    instance._password_changed = False
    revoke_user_tokens(instance)


def revoke_user_tokens(user: Any) -> int:
    """Revoke every active API token of `user`; how many were."""
    return ApiToken.objects.filter(user=user, revoked__isnull=True).update(revoked=timezone.now())
