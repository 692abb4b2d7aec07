"""Login throttling (django-axes) for the requests that log in: the form and POST /api/token/.
How failures are counted, and under which address: annotations.login_throttle."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class LoginThrottleBackend(AxesStandaloneBackend):
    """Refuses a locked-out user name or address; leaves requestless checks (shell, commands,
    tests calling `authenticate()` directly) to the model backend, as there is nobody to lock."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
