"""Who may do what: every role check of the app goes through this module."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.permissions import BasePermission

REVIEWER = "reviewer"
ADJUDICATOR = "adjudicator"
CURATOR = "curator"
ROLES = (REVIEWER, ADJUDICATOR, CURATOR)


def user_roles(user: Any) -> frozenset[str]:
    """The roles of a user (their groups), read once per request and cached on the user."""
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
        return frozenset()
    cached = getattr(user, "_clinreview_roles", None)
    if cached is None:
        if user.is_superuser:
            cached = frozenset(ROLES)
        else:
            cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._clinreview_roles = cached
    return cached


def has_role(user: Any, *roles: str) -> bool:
    return bool(user_roles(user) & set(roles))


def check_role(user: Any, *roles: str) -> None:
    if not has_role(user, *roles):
        raise PermissionDenied


def role_required(*roles: str) -> Callable:
    """View decorator: 403 unless the (logged-in) user has one of the roles."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any):
            check_role(request.user, *roles)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


class HasRole(BasePermission):
    """DRF permission: `permission_classes = [HasRole.of(CURATOR)]`."""

    roles: tuple[str, ...] = ()

    @classmethod
    def of(cls, *roles: str) -> type[HasRole]:
        return type(f"HasRole_{'_'.join(roles)}", (cls,), {"roles": roles})

    def has_permission(self, request, view) -> bool:
        return bool(
            request.user and request.user.is_authenticated and has_role(request.user, *self.roles)
        )


def roles_context(request: HttpRequest) -> dict[str, Any]:
    roles = user_roles(getattr(request, "user", None))
    return {
        "roles": roles,
        "is_reviewer": REVIEWER in roles,
        "is_adjudicator": ADJUDICATOR in roles,
        "is_curator": CURATOR in roles,
    }
