"""Celery tasks, one module per workflow. Tasks take ids, call a service and are idempotent."""

from __future__ import annotations

from annotations.tasks import (
    degrade,  # noqa: F401
    imports,  # noqa: F401
    jobs,  # noqa: F401
    recovery,  # noqa: F401
    releases,  # noqa: F401
    runs,  # noqa: F401
    triage,  # noqa: F401
)
