"""A throw-away site for the benches that time real Celery workers (run_throughput.py,
gastricx_import.py): SQLite and the file-system broker in a temporary folder, as the embedded
default, and worker processes started and stopped around a measurement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def setup_django(folder: Path) -> dict[str, str]:
    """Point this process (and the workers it starts) at a fresh database, media and broker."""
    env = {
        "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}",
        "MEDIA_ROOT": str(folder / "media"),
        "VAR_DIR": str(folder),
        "CELERY_BROKER_URL": "filesystem://localhost/",
        "CELERY_BROKER_DIR": str(folder / "broker"),
        "CELERY_QUEUE": "bench",
        "DJANGO_SETTINGS_MODULE": "clinreview.settings",
        # As deployed: with DEBUG on, Django also records every query it runs.
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-not-a-secret",
        "DEID_SECRET": "bench-only-deid-secret",
        "ENDPOINT_ALLOWED_HOSTS": "127.0.0.1",  # the benches' model answers on loopback
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def start_workers(count: int, env: dict[str, str]) -> list[subprocess.Popen]:
    """`count` workers on the bench's queue, each taking one task at a time."""
    args = [sys.executable, "-m", "celery", "-A", "clinreview", "worker", "-Q", env["CELERY_QUEUE"]]
    args += ["--pool", "threads", "--concurrency", "1", "--loglevel=error"]
    args += ["--without-heartbeat", "--without-gossip", "--without-mingle"]
    return [
        subprocess.Popen(
            [*args, "--hostname", f"bench{n}@%h"],
            cwd=ROOT,
            env={**os.environ, **env},
            start_new_session=True,
            stdout=subprocess.DEVNULL,  # the workers' banners; errors still reach stderr
        )
        for n in range(count)
    ]


def stop_workers(workers: list[subprocess.Popen]) -> None:
    for worker in workers:
        os.killpg(worker.pid, signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
