"""The interface language: a switcher that remembers the choice per user, applied at login."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.utils.translation import check_for_language
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

from annotations.services.preferences import (
    language_supported,
    user_language,
    user_language_set,
)


def _set_language_cookie(response: HttpResponse, language: str) -> None:
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


@login_not_required  # the switcher is on the login page too
@require_POST
def language_switch(request: HttpRequest) -> HttpResponse:
    """Django's set_language (cookie and redirect), remembered on the profile when logged in."""
    language = request.POST.get("language", "")
    response = set_language(request)
    if request.user.is_authenticated and language_supported(language):
        user_language_set(user=request.user, language=language)
    return response


class LanguageLoginView(auth_views.LoginView):
    """Login that brings back the user's remembered language, on any browser.

    A language chosen on the login page by someone who never chose before becomes their choice.
    """

    redirect_authenticated_user = True

    def form_valid(self, form) -> HttpResponse:
        response = super().form_valid(form)
        user = form.get_user()
        language = user_language(user)
        if language:
            _set_language_cookie(response, language)
            return response
        chosen = self.request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME, "")
        if language_supported(chosen) and check_for_language(chosen):
            user_language_set(user=user, language=chosen)
        return response
