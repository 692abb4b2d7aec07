"""Services start tasks by their registered names (annotations/services/dispatch.py): each name is
a task the worker knows, a message leaves only after the commit, and a wrong name fails loudly."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import transaction

from annotations.services import dispatch
from clinreview.celery import app

NAMES = (
    dispatch.BENCHMARK_IMPORT,
    dispatch.BENCHMARK_DEGRADE,
    dispatch.TRIAGE_BENCHMARK,
    dispatch.JOB_CHUNK,
    dispatch.RUN_CHUNK_EXECUTE,
    dispatch.RELEASE_BUILD,
)


def test_every_name_is_a_task_the_worker_registers():
    # What a worker sees: the task modules found by autodiscovery.
    app.loader.import_default_modules()
    assert set(NAMES) <= set(app.tasks)
    assert set(dispatch.JOB_TASKS.values()) <= set(NAMES)


@pytest.mark.django_db(transaction=True)
def test_a_task_is_sent_after_the_commit_and_not_after_a_rollback():
    task = app.tasks[dispatch.RELEASE_BUILD]
    with mock.patch.object(task, "delay") as delay:
        with transaction.atomic():
            dispatch.enqueue(dispatch.RELEASE_BUILD, 7)
            delay.assert_not_called()
        delay.assert_called_once_with(7)

        delay.reset_mock()
        with pytest.raises(RuntimeError), transaction.atomic():
            dispatch.enqueue(dispatch.RELEASE_BUILD, 8)
            raise RuntimeError("rolled back")
        delay.assert_not_called()


def test_a_name_no_task_registers_is_an_error():
    with pytest.raises(KeyError):
        dispatch.send("annotations.no_such_task", 1)
