"""What debug pages and error reports may show of the settings and the request."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter

# Django's own pattern, and every name that carries a credential inside a URL (database, broker,
# cache) or a model endpoint's key; request variables (os.environ under runserver) alike.
CREDENTIAL_NAMES = re.compile(
    r"API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|AUTHORIZATION|CREDENTIAL|DSN"
    r"|DATABASE_URL|BROKER_URL|REDIS_URL|CACHE_URL|RESULT_BACKEND",
    flags=re.IGNORECASE,
)
URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]*@", re.IGNORECASE)


class CredentialsHidingFilter(SafeExceptionReporterFilter):
    """Masks settings and request variables that hold credentials, and the password of any URL
    shown elsewhere (a connection string in a setting whose name says nothing)."""

    hidden_settings = CREDENTIAL_NAMES

    def cleanse_setting(self, key, value):
        cleansed = super().cleanse_setting(key, value)
        if isinstance(cleansed, str):
            return URL_PASSWORD.sub(rf"\g<scheme>{self.cleansed_substitute}@", cleansed)
        return cleansed
