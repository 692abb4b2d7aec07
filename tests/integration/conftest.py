"""Integration tests run on PostgreSQL and Redis with real Celery worker processes.

`make integration` sets DATABASE_URL and CELERY_BROKER_URL and CLINREVIEW_REQUIRE_SERVICES=1: then a
missing service fails the run instead of skipping it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session", autouse=True)
def _services_required():
    engine = settings.DATABASES["default"]["ENGINE"]
    broker = settings.CELERY_BROKER_URL
    problems = []
    if "postgresql" not in engine:
        problems.append(f"DATABASE_URL is not PostgreSQL (engine {engine})")
    if not broker.startswith("redis://"):
        problems.append(f"CELERY_BROKER_URL is not Redis ({broker})")
    else:
        import redis

        try:
            redis.Redis.from_url(broker, socket_connect_timeout=3).ping()
        except redis.RedisError as error:
            problems.append(f"Redis unreachable: {error}")
    if problems:
        message = "; ".join(problems)
        if os.environ.get("CLINREVIEW_REQUIRE_SERVICES") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def _worker_env() -> dict[str, str]:
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    # The worker must use the test database that pytest-django created, not the configured one.
    env["DATABASE_URL"] = (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    env["MEDIA_ROOT"] = str(settings.MEDIA_ROOT)
    env["RELEASES_ROOT"] = str(settings.RELEASES_ROOT)
    return env


class Worker:
    """A real Celery worker process on the configured broker."""

    def __init__(self, *extra: str) -> None:
        self.args = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "clinreview",
            "worker",
            "--loglevel=warning",
            "-Q",
            settings.CELERY_TASK_DEFAULT_QUEUE,
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            *extra,
        ]
        self.process: subprocess.Popen | None = None

    def start(self) -> Worker:
        self.process = subprocess.Popen(
            self.args, cwd=ROOT, env=_worker_env(), start_new_session=True
        )
        return self

    def kill(self) -> None:
        """SIGKILL the whole process group: no chance to finish or acknowledge anything."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def celery_worker_process():
    """Start real workers with `start(*args)`; all are stopped at the end of the test."""
    workers: list[Worker] = []

    def start(*extra: str) -> Worker:
        worker = Worker(*extra).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


@pytest.fixture(autouse=True)
def _purge_broker():
    from clinreview.celery import app

    app.control.purge()
    yield


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2):
    """Poll until predicate() is truthy (a deadline, not a timed assertion: the work is async)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")
