"""Celery tasks, one module per workflow. Tasks take ids, call a service and are idempotent."""

from __future__ import annotations

from annotations.tasks import imports  # noqa: F401
