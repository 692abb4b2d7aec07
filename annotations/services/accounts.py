"""API tokens: issued on a password, expiring, revoked at logout."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from knox.models import AuthToken
from knox.settings import knox_settings


@transaction.atomic
def api_token_create(*, user) -> tuple[str, datetime]:
    """A new API token for `user` (only its digest is stored) and when it expires.

    The oldest tokens beyond the per-user limit are revoked, so scripts that log in again and
    again do not pile up live tokens.
    """
    limit = knox_settings.TOKEN_LIMIT_PER_USER
    live = AuthToken.objects.filter(user=user).order_by("-created")
    if limit is not None:
        stale = list(live.values_list("pk", flat=True)[limit - 1 :])
        AuthToken.objects.filter(pk__in=stale).delete()
    instance, token = AuthToken.objects.create(user=user, expiry=knox_settings.TOKEN_TTL)
    return token, instance.expiry


def api_tokens_revoke(*, user, token_key: str | None = None) -> int:
    """Revoke one token (by its key prefix, as knox identifies it) or every token of `user`."""
    tokens = AuthToken.objects.filter(user=user)
    if token_key is not None:
        tokens = tokens.filter(token_key=token_key)
    deleted, _rows = tokens.delete()
    return deleted
