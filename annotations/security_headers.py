"""Headers and sessions a hospital's security review expects (docs/security.md).

- Every response carries a Content-Security-Policy (CONTENT_SECURITY_POLICY): scripts only from
  our own static files, never inline (no template has an inline script or event handler; keep it
  so). Style attributes (progress bars' widths) are allowed, style elements only from our files.
- A response without its own Cache-Control is `no-store`: pages and API answers (patient images'
  metadata, reports) stay out of browser and proxy caches. Images and volume slices set their
  own `private` max-age; static files are served (and cached) before this middleware runs.
- A session ends SESSION_MAX_HOURS after the login whatever the activity, and after
  SESSION_IDLE_MINUTES without a request.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse

_STARTED = "_clinreview_started_at"
_SEEN = "_clinreview_seen_at"
# The last-seen time is written at most this often, so that not every request saves the session.
_SEEN_RESOLUTION = 60


def session_start(sender, request, user, **kwargs) -> None:
    """At login (user_logged_in): the session's clocks start, saved with the login itself."""
    if request is not None and hasattr(request, "session"):
        request.session[_STARTED] = request.session[_SEEN] = int(time.time())


class SecurityHeadersMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        if "Cache-Control" not in response:
            response["Cache-Control"] = "no-store"
        return response


class SessionLifetimeMiddleware:
    """Log out a session past its absolute lifetime or idle too long (after authentication)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and hasattr(request, "session"):
            self._check(request)
        return self.get_response(request)

    def _check(self, request: HttpRequest) -> None:
        session, now = request.session, int(time.time())
        started, seen = session.get(_STARTED), session.get(_SEEN)
        if started is None or seen is None:
            session[_STARTED] = session[_SEEN] = now
            return
        too_old = now - started > settings.SESSION_MAX_HOURS * 3600
        idle = now - seen > settings.SESSION_IDLE_MINUTES * 60
        if too_old or idle:
            logout(request)  # the login-required middleware sends the page to the login form
            return
        if now - seen >= _SEEN_RESOLUTION:
            session[_SEEN] = now
