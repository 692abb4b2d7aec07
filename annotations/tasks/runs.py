"""Celery task that executes a model run (see `annotations.services.runs.run_execute`)."""

from __future__ import annotations

from celery import shared_task

from annotations.services import runs as run_services


@shared_task(name="annotations.run_execute", acks_late=True, reject_on_worker_lost=True)
def run_execute(run_id: int) -> None:
    """Execute run `run_id`: idempotent, so a redelivery after a killed worker resumes the run.

    The claim is a conditional UPDATE (queued/running → running); a run that is done, failed or
    cancelled is left alone. Items already predicted are skipped, so nothing is asked twice
    except a request that was in flight when the previous worker died.
    """
    run_services.run_execute(run_id=run_id)
