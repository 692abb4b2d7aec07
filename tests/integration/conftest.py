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
from contextlib import contextmanager
from dataclasses import dataclass
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


# Worker settings for the kill-and-recover tests: beat every second or two, a heartbeat gone
# quiet for 4 s counts as a dead worker, and queued work is resent after 6 s.
RECOVERY_ENV = {
    "JOB_HEARTBEAT_SECONDS": "1",
    "JOB_STALE_SECONDS": "4",
    "JOB_REAP_SECONDS": "2",
    "JOB_RESEND_SECONDS": "6",
}


class Worker:
    """A real Celery worker process on the configured broker (or the one `env` names)."""

    def __init__(self, *extra: str, env: dict[str, str] | None = None) -> None:
        self.env = env or {}
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
            self.args, cwd=ROOT, env={**_worker_env(), **self.env}, start_new_session=True
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
    """Start real workers with `start(*args, env={...})`; all are stopped at the end of the test."""
    workers: list[Worker] = []

    def start(*extra: str, env: dict[str, str] | None = None) -> Worker:
        worker = Worker(*extra, env=env).start()
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


@dataclass
class Broker:
    """The broker a test runs on: `env` is what its workers need to use it too."""

    name: str
    env: dict[str, str]

    def worker_env(self, *, recovery: bool = False) -> dict[str, str]:
        """Environment for one more worker: this broker, and with `recovery` the short
        heartbeat/reaper settings (start the worker with `beat_args(...)` too)."""
        return {**self.env, **(RECOVERY_ENV if recovery else {})}


def beat_args(tmp_path: Path) -> tuple[str, ...]:
    """Worker arguments that embed Celery beat (the reaper's clock), with its own schedule file."""
    schedule = tmp_path / f"beat-{time.monotonic_ns()}"
    return ("-B", "--schedule", str(schedule))


@pytest.fixture(params=["redis", "filesystem"])
def broker(request, tmp_path):
    """Run the test on Redis and again on the file-system broker (the embedded default).

    This process's Celery app is pointed at the same broker, so tasks the services send after
    commit reach the workers the test starts with `broker.env`.
    """
    if request.param == "redis":
        yield Broker("redis", {})
        return
    folder = tmp_path / "filesystem-broker"
    options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"),
        "store_processed": False,
        "control_folder": str(folder / "control"),
    }
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(parents=True)
    with _celery_app_on("filesystem://localhost/", options):
        yield Broker(
            "filesystem",
            {"CELERY_BROKER_URL": "filesystem://localhost/", "CELERY_BROKER_DIR": str(folder)},
        )


@contextmanager
def _celery_app_on(url: str, options: dict):
    from clinreview.celery import app

    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    saved_env = os.environ.get("CELERY_BROKER_URL")
    _switch(app, url, options)
    try:
        yield
    finally:
        _switch(app, *saved)
        if saved_env is None:
            os.environ.pop("CELERY_BROKER_URL", None)
        else:
            os.environ["CELERY_BROKER_URL"] = saved_env


def _switch(app, url: str, options: dict) -> None:
    # Celery reads CELERY_BROKER_URL from the environment before its own setting; connections
    # and producers are pooled on first use: drop the pools so that the next task sent opens a
    # connection to the new broker.
    os.environ["CELERY_BROKER_URL"] = url
    app.conf.broker_url = url
    app.conf.broker_transport_options = options
    # kombu keeps its pools in a registry by URL: a pool closed here would come back closed when
    # the app returns to that URL, so the registry is emptied too.
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None
    # The control mailbox (purge, inspect) caches its producer pool too: forget it likewise.
    app.control.mailbox.__dict__.pop("producer_pool", None)
