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

    def _without_url_password(self, value):
        if type(value) is str:  # lazy objects pretend to be str
            return URL_PASSWORD.sub(rf"\g<scheme>{self.cleansed_substitute}@", value)
        return value

    def cleanse_setting(self, key, value):
        return self._without_url_password(super().cleanse_setting(key, value))

    def get_traceback_frame_variables(self, request, tb_frame):
        # Local variables get the settings' rules: a credential-like name, a nested PASSWORD
        # key or a connection string is masked there too.
        variables = super().get_traceback_frame_variables(request, tb_frame)
        return [(name, self.cleanse_setting(name, value)) for name, value in variables]
