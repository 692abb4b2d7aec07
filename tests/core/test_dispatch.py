"""Services start tasks by their registered names (annotations/services/dispatch.py): each name is
a task the worker knows, a message leaves only after the commit, and a wrong name fails loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from django.db import transaction

from annotations.services import dispatch
from clinreview.celery import app

ROOT = Path(__file__).resolve().parents[2]

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
    app.autodiscover_tasks(force=True)
    assert set(NAMES) <= set(app.tasks)
    assert set(dispatch.JOB_TASKS.values()) <= set(NAMES)


@pytest.mark.django_db(transaction=True)
def test_a_task_is_sent_after_the_commit_and_not_after_a_rollback():
    with mock.patch("celery.app.task.Task.delay") as delay:
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


def test_a_process_that_never_imported_the_tasks_sends_by_name():
    # A web process: the tasks are not loaded at start (tests/test_startup.py); the first send
    # finds them as a worker does.
    probe = """
import sys
import django
django.setup()
from unittest import mock
from annotations.services import dispatch
assert "annotations.tasks" not in sys.modules
with mock.patch("celery.app.task.Task.delay") as delay:
    dispatch.send(dispatch.RELEASE_BUILD, 5)
assert delay.call_args == mock.call(5), delay.call_args
assert "annotations.tasks.releases" in sys.modules
"""
    result = _python(probe, os.environ)
    assert result.returncode == 0, result.stderr


def _python(probe: str, env) -> subprocess.CompletedProcess:
    """`probe` run by a fresh interpreter on the project's settings."""
    env = {**env, "DJANGO_SETTINGS_MODULE": "clinreview.settings", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_the_embedded_broker_takes_a_message_without_a_warning(tmp_path):
    # `make run`'s default broker (kombu's file system) got a "No hostname was supplied" warning
    # on every message; the message lands in the queue folder.
    probe = """
import django
django.setup()
from annotations.services import dispatch
dispatch.send(dispatch.RELEASE_BUILD, 5)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_URL"))}
    result = _python(probe, {**env, "VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "hostname" not in result.stderr, result.stderr
    assert len(list((tmp_path / "celery-broker" / "queue").iterdir())) == 1
