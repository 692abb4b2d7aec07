"""Domain errors become HTTP answers in one place."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotations.services.errors import ConflictError, DomainError, NotAllowedError


def exception_handler(exc, context):
    if isinstance(exc, ConflictError):
        return Response(
            {"detail": str(exc), "code": "conflict", "current_version": exc.current_version},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, NotAllowedError):
        return Response({"detail": str(exc), "code": exc.code}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, DomainError):
        return Response({"detail": str(exc), "code": exc.code}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PermissionDenied) and str(exc):
        # A refusal that says why (selectors.visibility): DRF would drop the reason.
        exc = exceptions.PermissionDenied(str(exc))
    return drf_exception_handler(exc, context)
