"""Users and their roles."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from annotations.access import ROLES


@transaction.atomic
def user_ensure(*, username: str, password: str, roles: tuple[str, ...]) -> tuple[object, bool]:
    """Create the user with these roles if missing; an existing user keeps its password."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown roles: {sorted(unknown)}")
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        user.save()
    for role in roles:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user, created
