from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing(request):
    """Tests log in many personas; the production hasher would make each take about a second.

    Set once here for every test (Django or browser), so no test module needs its own.
    """
    if not request.config.pluginmanager.hasplugin("django"):
        return
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
