"""Login throttling's answer and a logout that also ends the user's API tokens."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from annotations.services.accounts import api_tokens_revoke


def locked_out(request: HttpRequest, response=None, credentials=None) -> HttpResponse:
    """django-axes calls this for a login refused after too many failures (429)."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    message = _(
        "Too many failed logins from this user name or address. Try again in %(n)d minutes."
    ) % {"n": minutes}
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": message, "code": "locked_out"}, status=429)
    return render(request, "registration/login.html", {"locked": message}, status=429)


class LogoutView(auth_views.LogoutView):
    """Logging out of the web ends every API token of the user too (scripts log in again)."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.user.is_authenticated:
            api_tokens_revoke(user=request.user)
        return super().post(request, *args, **kwargs)
