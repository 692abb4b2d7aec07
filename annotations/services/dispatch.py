"""The one way a service starts background work: a Celery task named as it is registered, sent
once the transaction that made its rows commits.

Services never import `annotations.tasks`: the tasks import services to run them, so the arrows
go one way (tasks → services → models; `.importlinter` holds it). The names below are the ones
the tasks register (`@shared_task(name=...)`); messages on the broker and the beat schedule carry
them, so they never change.
"""

from __future__ import annotations

from django.db import transaction

BENCHMARK_IMPORT = "annotations.benchmark_import"
BENCHMARK_DEGRADE = "annotations.benchmark_degrade"
TRIAGE_BENCHMARK = "annotations.triage_benchmark"
JOB_CHUNK = "annotations.job_chunk"
RUN_CHUNK_EXECUTE = "annotations.run_chunk_execute"
RELEASE_BUILD = "annotations.release_build"

# A job's kind (Job.kind) and the task that plans and finishes it.
JOB_TASKS = {"import": BENCHMARK_IMPORT, "degrade": BENCHMARK_DEGRADE, "triage": TRIAGE_BENCHMARK}


def enqueue(task_name: str, *args: object) -> None:
    """Send the task after the current transaction commits (at once outside one); a transaction
    rolled back sends nothing, so a worker never looks for rows that were not written."""
    transaction.on_commit(lambda: send(task_name, *args))


def send(task_name: str, *args: object) -> None:
    """Send the task now, through the task Celery registered under that name, so its options
    (and `task_always_eager`, where set) apply as if the caller had imported it. A name no task
    registers is an error here, not a message that no worker would ever take."""
    # The Celery app loads with the first message sent, not with every process that starts.
    from clinreview.celery import app

    task = app.tasks.get(task_name)
    if task is None:
        # The task modules, found as the worker finds them (autodiscovery), once per process;
        # not through import_default_modules, which would also run Django's system checks.
        app.autodiscover_tasks(force=True)
        task = app.tasks[task_name]
    task.delay(*args)
