"""Celery tasks, one module per workflow. Tasks take ids, call a service and are idempotent."""

from __future__ import annotations

# The configured Celery app first, so that every task here is bound to it (not to a default app
# with no broker) even when a process imports a task before sending anything.
import clinreview.celery  # noqa: F401
from annotations.tasks import (
    degrade,  # noqa: F401
    imports,  # noqa: F401
    jobs,  # noqa: F401
    recovery,  # noqa: F401
    releases,  # noqa: F401
    runs,  # noqa: F401
    triage,  # noqa: F401
)
