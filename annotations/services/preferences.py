"""Per-user preferences: the interface language."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from annotations.models import UserProfile


def language_supported(code: str) -> bool:
    return code in {language for language, _name in settings.LANGUAGES}


@transaction.atomic
def user_language_set(*, user, language: str) -> UserProfile:
    """Remember the user's interface language; an unknown code is ignored (kept as it was)."""
    profile, _created = UserProfile.objects.select_for_update().get_or_create(user=user)
    if language_supported(language) and profile.language != language:
        profile.language = language
        profile.save(update_fields=["language"])
    return profile


def user_language(user) -> str:
    """The language the user chose last, or "" when they never chose."""
    language = UserProfile.objects.filter(user=user).values_list("language", flat=True).first()
    return language if language and language_supported(language) else ""
