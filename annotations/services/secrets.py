"""Model endpoint keys: where they may come from, how they are kept, which hosts may get them.

A key reaches a worker in one of two ways, and never any other:
- an environment variable whose name starts with ENDPOINT_KEY_ENV_PREFIX (so `SECRET_KEY` or
  `DATABASE_URL` can never be sent to a model server as a Bearer token);
- a key typed once by a curator, stored encrypted at rest with ENDPOINT_KEY_ENCRYPTION_KEY
  (Fernet), never shown again.
The endpoint's host must be in ENDPOINT_ALLOWED_HOSTS (none by default in production; "*"
allows any). Both rules are checked when an endpoint is saved and again when a worker builds
its client.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.utils.translation import gettext as _

from annotations.services.errors import DomainError


def key_env_check(name: str) -> str:
    """The variable name, if an endpoint may read its key from it."""
    prefix = settings.ENDPOINT_KEY_ENV_PREFIX
    if name and not (prefix and name.startswith(prefix) and len(name) > len(prefix)):
        raise DomainError(
            _(
                "The API key variable must be named %(prefix)s… (for example %(prefix)sOPENAI); "
                "other environment variables hold the server's own secrets."
            )
            % {"prefix": prefix},
            code="key_env_refused",
        )
    return name


def _host_allowed(host: str) -> bool:
    allowed = [entry.lower() for entry in settings.ENDPOINT_ALLOWED_HOSTS]
    if "*" in allowed:
        return True  # declared open on purpose
    return any(
        host == entry or (entry.startswith(".") and (host.endswith(entry) or host == entry[1:]))
        for entry in allowed
    )


def base_url_check(url: str) -> str:
    """The URL, if it is http(s) on an allowed host."""
    parts = urlsplit(url or "")
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise DomainError(_("The base URL must be an http or https address."), code="bad_url")
    if not _host_allowed(host):
        raise DomainError(
            _("Model endpoints may not be on %(host)s (allowed: %(allowed)s).")
            % {
                "host": host,
                # Nothing is allowed until the server names its model hosts.
                "allowed": ", ".join(settings.ENDPOINT_ALLOWED_HOSTS)
                or _("none: the server's ENDPOINT_ALLOWED_HOSTS is not set"),
            },
            code="host_refused",
        )
    return url


def _fernet() -> Fernet:
    key = settings.ENDPOINT_KEY_ENCRYPTION_KEY
    if not key:
        raise DomainError(
            _(
                "Stored API keys need ENDPOINT_KEY_ENCRYPTION_KEY on the server (a Fernet key); "
                "without it, give the name of a %(prefix)s… environment variable instead."
            )
            % {"prefix": settings.ENDPOINT_KEY_ENV_PREFIX},
            code="no_encryption_key",
        )
    try:
        return Fernet(key.encode())
    except ValueError as error:
        raise DomainError(
            _("ENDPOINT_KEY_ENCRYPTION_KEY is not a valid Fernet key."), code="no_encryption_key"
        ) from error


def key_encrypt(api_key: str) -> str:
    """The stored form of a typed key (empty for none)."""
    return _fernet().encrypt(api_key.encode()).decode() if api_key else ""


def endpoint_api_key(endpoint) -> str | None:
    """The key a worker sends to this endpoint (None for none), after checking both rules again:
    an endpoint saved before they existed gets no server secret either."""
    base_url_check(endpoint.base_url)
    if endpoint.api_key_encrypted:
        try:
            return _fernet().decrypt(endpoint.api_key_encrypted.encode()).decode()
        except InvalidToken as error:
            raise DomainError(
                _("The stored API key cannot be read with this ENDPOINT_KEY_ENCRYPTION_KEY."),
                code="key_unreadable",
            ) from error
    if not endpoint.api_key_env:
        return None
    key = os.environ.get(key_env_check(endpoint.api_key_env))
    if not key:
        raise DomainError(
            _("The environment variable %(name)s holding the API key is not set.")
            % {"name": endpoint.api_key_env}
        )
    return key
