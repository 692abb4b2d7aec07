"""Celery tasks, one module per workflow. Tasks take ids, call a service and are idempotent."""

from __future__ import annotations
