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
