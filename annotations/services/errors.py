from __future__ import annotations


class DomainError(Exception):
    """A request that the domain refuses, with a message meant for the user."""

    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code:
            self.code = code


class ConflictError(DomainError):
    """A write based on a stale version: the caller must reload and redo it."""

    code = "conflict"

    def __init__(self, message: str, *, current_version: int | None = None) -> None:
        super().__init__(message)
        self.current_version = current_version


class NotAllowedError(DomainError):
    """A decision this user may not take on this object (answered 403), whatever their roles."""

    code = "not_allowed"
