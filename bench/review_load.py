"""Review page and review submit under 50 concurrent reviewers, against 100k items, on loopback.

Run: ``.venv/bin/python bench/review_load.py [--items 100000] [--reviewers 50] [--seconds 30]``.

It builds a fresh SQLite database in a temporary folder (the configured settings, pointed there
through ``DATABASE_URL``), bulk-creates the benchmark (one shared image), double-assigns every
item through the real assignment service, starts gunicorn (threads) on 127.0.0.1, and lets each
reviewer thread, logged in with its own session, loop: GET its review page, POST a verdict the
way htmx does (the response is the next item's work area). It prints p50/p95 latency of the page
and of the submit as ratios to ``/healthz`` measured in the same run, the throughput, and checks
that no write was lost (Reviews in the database == successful submits).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
VERSION_INPUT = re.compile(r'name="version" value="(\d+)"')


def environment(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'bench.sqlite3'}",
        "VAR_DIR": str(folder),
        "MEDIA_ROOT": str(folder / "media"),
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-not-a-secret",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "MANIFEST_STATIC": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "ERROR",
        "PYTHONPATH": str(ROOT),
    }


def setup_database(items: int, reviewers: int) -> None:
    """Runs inside a child process with the bench environment: data and one session per reviewer."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")
    django.setup()
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.auth.models import Group
    from django.contrib.sessions.backends.db import SessionStore
    from django.db import connection

    from annotations.access import REVIEWER
    from annotations.models import Benchmark, Item, ItemImage
    from annotations.services.images import image_store
    from annotations.services.review import assignments_create
    from tests.factories import jpeg_bytes

    group, _ = Group.objects.get_or_create(name=REVIEWER)
    # Unusable passwords: hashing 50 real ones would take longer than the measurement.
    people = get_user_model().objects.bulk_create(
        get_user_model()(username=f"rev{number:02d}", password="!") for number in range(reviewers)
    )
    group.user_set.add(*people)
    benchmark = Benchmark.objects.create(name="load", family="vlmeval", option_letters=list("ABCD"))
    image, _ = image_store(data=jpeg_bytes(size=(512, 512)))
    Item.objects.bulk_create(
        (
            Item(
                benchmark=benchmark,
                source_index=index,
                question=f"Which finding is shown in frame {index}?",
                options=["Polyp", "Ulcer", "Normal mucosa", "Bleeding"],
                answer="ABCD"[index % 4],
                category=("Lesion", "Anatomy", "Instrument")[index % 3],
            )
            for index in range(items)
        ),
        batch_size=5000,
    )
    # One INSERT ... SELECT links every item to the shared image (100k ORM objects take long).
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ItemImage._meta.db_table} (item_id, image_id, position) "
            f"SELECT id, %s, 0 FROM {Item._meta.db_table} WHERE benchmark_id = %s",
            [image.pk, benchmark.pk],
        )
    assignments_create(benchmark=benchmark, reviewers=people, per_item=2)
    sessions = []
    for user in people:
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        sessions.append(store.session_key)
    print(json.dumps(sessions))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(env: dict[str, str], port: int) -> subprocess.Popen:
    server = subprocess.Popen(
        [PYTHON, "-m", "gunicorn", "clinreview.wsgi", "-b", f"127.0.0.1:{port}"]
        + ["--workers", "4", "--threads", "16", "-k", "gthread", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    deadline, last = time.monotonic() + 60, "no answer"
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            if response.status == 200:
                return server
            last = f"HTTP {response.status}: {response.read()[:200]!r}"
        except OSError as error:
            last = repr(error)
        time.sleep(0.3)
    server.terminate()
    server.wait(timeout=20)
    raise SystemExit(f"gunicorn did not start ({last})")


class Reviewer(threading.Thread):
    """One clinician: page, verdict, page, verdict... on a keep-alive connection."""

    def __init__(self, port: int, session: str, stop_at: float, seed: int) -> None:
        super().__init__(daemon=True)
        self.port, self.stop_at, self.random = port, stop_at, random.Random(seed)
        self.cookies = {"sessionid": session}
        self.page_ms: list[float] = []
        self.submit_ms: list[float] = []
        self.submitted = self.failed = 0

    def request(self, connection, method: str, path: str, body: str = "", headers=None):
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        all_headers = {"Cookie": cookie, **(headers or {})}
        start = time.perf_counter()
        connection.request(method, path, body=body or None, headers=all_headers)
        response = connection.getresponse()
        text = response.read().decode()
        elapsed = (time.perf_counter() - start) * 1000
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response, text, elapsed

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        response, _text, _ms = self.request(connection, "GET", "/review/")
        path = response.headers.get("Location", "")
        while path.startswith("/review/items/") and time.monotonic() < self.stop_at:
            response, page, elapsed = self.request(connection, "GET", path)
            self.page_ms.append(elapsed)
            token, version = CSRF_INPUT.search(page), VERSION_INPUT.search(page)
            if response.status != 200 or not token or not version:
                self.failed += 1
                return
            verdict = "accept" if self.random.random() < 0.8 else "reject"
            form = f"verdict={verdict}&version={version.group(1)}&reason=ambiguous&seconds_spent=3"
            form += f"&csrfmiddlewaretoken={token.group(1)}"
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "HX-Request": "true",
                "Referer": f"http://127.0.0.1:{self.port}{path}",
            }
            response, _body, elapsed = self.request(connection, "POST", path, form, headers)
            self.submit_ms.append(elapsed)
            if response.status == 200:
                self.submitted += 1
            else:
                self.failed += 1
            path = response.headers.get("HX-Push-Url", "")


def healthz_baseline(port: int, clients: int, seconds: float) -> list[float]:
    timings: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def loop() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        local = []
        while time.monotonic() < stop_at:
            start = time.perf_counter()
            connection.request("GET", "/healthz")
            connection.getresponse().read()
            local.append((time.perf_counter() - start) * 1000)
        with lock:
            timings.extend(local)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return timings


def p50_p95(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    return statistics.median(values), statistics.quantiles(values, n=20)[-1]


def report(args, base: list[float], clients: list[Reviewer], elapsed: float, stored: int) -> None:
    pages = [ms for c in clients for ms in c.page_ms]
    submits = [ms for c in clients for ms in c.submit_ms]
    submitted = sum(c.submitted for c in clients)
    failed = sum(c.failed for c in clients)
    (b50, b95), (g50, g95), (s50, s95) = p50_p95(base), p50_p95(pages), p50_p95(submits)
    print(f"{args.items} items, {args.reviewers} concurrent reviewers, {elapsed:.1f} s of load")
    print(f"baseline /healthz      p50 {b50:7.1f} ms  p95 {b95:7.1f} ms  ({len(base)} requests)")
    print(f"review page (GET)      p50 {g50:7.1f} ms  p95 {g95:7.1f} ms  ({len(pages)} requests)")
    print(f"review submit (POST)   p50 {s50:7.1f} ms  p95 {s95:7.1f} ms  ({len(submits)} requests)")
    print(
        f"ratio to baseline      page p50 {g50 / b50:.1f}×  p95 {g95 / b95:.1f}×   "
        f"submit p50 {s50 / b50:.1f}×  p95 {s95 / b95:.1f}×"
    )
    print(
        f"throughput             {submitted / elapsed:.1f} reviews/s "
        f"({(len(pages) + len(submits)) / elapsed:.1f} requests/s), {failed} failed"
    )
    verdict = "OK" if stored == submitted else "LOST WRITES"
    print(
        f"writes                 {submitted} successful submits, {stored} Reviews stored → {verdict}"
    )
    print(
        f"budget p95 ≤ 150 ms    page {'OK' if g95 <= 150 else 'OVER'}, submit "
        f"{'OK' if s95 <= 150 else 'OVER'} (load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--reviewers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--setup", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        return setup_database(args.items, args.reviewers)
    with tempfile.TemporaryDirectory(prefix="review-load-") as name:
        folder = Path(name)
        env = environment(folder)
        started = time.monotonic()
        manage = [PYTHON, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        command = [PYTHON, __file__, "--setup", "--items", str(args.items)]
        output = subprocess.run(
            [*command, "--reviewers", str(args.reviewers)],
            cwd=ROOT,
            env={**env, "DJANGO_SETTINGS_MODULE": "clinreview.settings"},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        sessions = json.loads(output.strip().splitlines()[-1])
        print(f"setup: {args.items} items double-assigned in {time.monotonic() - started:.1f} s")
        port = free_port()
        server = start_server(env, port)
        try:
            base = healthz_baseline(port, args.reviewers, seconds=5)
            stop_at = time.monotonic() + args.seconds
            clients = [Reviewer(port, s, stop_at, seed) for seed, s in enumerate(sessions)]
            load_start = time.monotonic()
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            elapsed = time.monotonic() - load_start
        finally:
            server.terminate()
            server.wait(timeout=20)
        with sqlite3.connect(folder / "bench.sqlite3") as db:
            stored = db.execute("SELECT COUNT(*) FROM annotations_review").fetchone()[0]
        report(args, base, clients, elapsed, stored)


if __name__ == "__main__":
    main()
