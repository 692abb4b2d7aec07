"""Start-up time and memory of ClinReview's processes beside a bare Django project's.

Run: ``.venv/bin/python bench/startup.py [--rounds N]``. It makes a bare project with
``django-admin startproject`` in a temporary folder (the baseline, measured in the same run), then
starts each kind of process afresh, ROUNDS times, for both projects:

- web: import the WSGI application, resolve the whole URL configuration and serve a first request
  (the login page), as a gunicorn worker does before it answers;
- worker: what a Celery worker loads before it takes a task: Django, the Celery app and every task
  module (the bare project: a Celery app on the same Django, with no tasks);
- command: ``manage.py check``.

For each it prints the median wall time from the interpreter's start and the peak resident memory
(the child's own, from the kernel's rusage), and ClinReview's ratio to the bare project. The
machine's load average is printed too: the ratios, not the seconds, are what to compare between
runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_FIRST_REQUEST = """
from io import BytesIO
from wsgiref.util import setup_testing_defaults
environ = {"PATH_INFO": LOGIN_PATH, "REQUEST_METHOD": "GET", "wsgi.input": BytesIO()}
setup_testing_defaults(environ)
statuses = []
body = application(environ, lambda status, headers, exc_info=None: statuses.append(status))
b"".join(body)
assert statuses[0].startswith("200"), statuses
"""

WEB = (
    """
from django.urls import get_resolver
from {project}.wsgi import application

def walk(patterns):
    for pattern in patterns:
        walk(getattr(pattern, "url_patterns", []))

walk(get_resolver().url_patterns)
LOGIN_PATH = "{login}"
"""
    + _FIRST_REQUEST
)

CLINREVIEW_WORKER = """
import django
django.setup()
from clinreview.celery import app
app.loader.import_default_modules()
assert "annotations.run_chunk_execute" in app.tasks
"""

BARE_WORKER = """
import django
django.setup()
from celery import Celery
app = Celery("bare")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.loader.import_default_modules()
app.finalize()
"""


def web(project: str, login_path: str) -> str:
    return WEB.replace("{project}", project).replace("{login}", login_path)


def measure(args: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _pid, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(args[:3])} failed:\n{child.stderr.read().decode()}")
    return seconds, usage.ru_maxrss / 1024  # kilobytes on Linux


def bare_project(folder: Path) -> Path:
    admin = Path(sys.executable).with_name("django-admin")
    folder.mkdir()
    subprocess.run([str(admin), "startproject", "bare", str(folder)], check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout to measure (e.g. an older commit's)"
    )
    options = parser.parse_args()
    rounds, root = options.rounds, options.root.resolve()

    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        bare = bare_project(Path(tmp) / "bare")
        python = sys.executable
        base_env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        ours_env = {
            **base_env,
            "DEBUG": "1",
            "VAR_DIR": str(Path(tmp) / "var"),
            "DJANGO_SETTINGS_MODULE": "clinreview.settings",
            "PYTHONPATH": str(root),
        }
        bare_env = {**base_env, "DJANGO_SETTINGS_MODULE": "bare.settings", "PYTHONPATH": str(bare)}
        cases = {
            "web (wsgi + URL conf + first request)": (
                ([python, "-c", web("clinreview", "/login/")], root, ours_env),
                ([python, "-c", web("bare", "/admin/login/")], bare, bare_env),
            ),
            "worker (Django + Celery app + tasks)": (
                ([python, "-c", CLINREVIEW_WORKER], root, ours_env),
                ([python, "-c", BARE_WORKER], bare, bare_env),
            ),
            "command (manage.py check)": (
                ([python, "manage.py", "check"], root, ours_env),
                ([python, "manage.py", "check"], bare, bare_env),
            ),
        }
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"median of {rounds} fresh starts each; ratio = ClinReview / bare Django project")
        header = f"{'process':<40} {'ours s':>7} {'bare s':>7} {'ratio':>6}"
        print(f"{header} {'ours MiB':>9} {'bare MiB':>9} {'ratio':>6}")
        for name, (ours, baseline) in cases.items():
            # Interleaved, so that a change in the machine's load touches both sides alike.
            samples: dict[str, list[tuple[float, float]]] = {"ours": [], "bare": []}
            for _ in range(rounds):
                samples["ours"].append(measure(*ours))
                samples["bare"].append(measure(*baseline))
            ours_s, bare_s = (statistics.median(s for s, _ in samples[k]) for k in ("ours", "bare"))
            ours_m, bare_m = (statistics.median(m for _, m in samples[k]) for k in ("ours", "bare"))
            print(
                f"{name:<40} {ours_s:7.2f} {bare_s:7.2f} {ours_s / bare_s:6.1f}"
                f" {ours_m:9.0f} {bare_m:9.0f} {ours_m / bare_m:6.1f}"
            )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
