"""How many clinicians does one server hold? Reviewers with think time against a real server.

Run, e.g.::

    .venv/bin/python bench/review_load.py --database-url postgres://postgres@127.0.0.1/bench \\
        --broker-url redis://127.0.0.1:6379/2 --reviewers 10,25,50 --think 1-3 --duration 60 \\
        --mode api --server gunicorn

It migrates the database, makes a synthetic benchmark there with `manage.py seed_load` (fresh
name per run; `--items`), starts the server (gunicorn, or `runserver`) with `DEBUG=0`, and for
each reviewer count lets that many clinicians work at once for `--duration` seconds: each gets
their next item, thinks for a random time in `--think` seconds, submits a verdict, and so on
(`--mode api`: GET /api/queue/next/ then POST /api/items/ID/reviews/ with a token; `--mode html`:
the review page, then the htmx POST whose answer is the next item's page). It prints, per
reviewer count, the throughput, p50/p95/p99 of each request kind, the 5xx answers, the lost
writes (every 2xx review looked up in the database afterwards) and, at the end, the largest
reviewer count whose every request kind kept p95 ≤ `--budget-ms` (300).

With `--reviewers 1 --think 0` it measures one client's next item + submit, e.g. at 10k and at
200k items.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
PASSWORD = "load-test-password"
CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
VERSION_INPUT = re.compile(r'name="version" value="(\d+)"')
ITEM_PATH = re.compile(r"^/review/items/(\d+)/$")
IDLE_SECONDS = 1.5


def environment(args, folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": args.database_url or f"sqlite:///{folder / 'bench.sqlite3'}",
        "CELERY_BROKER_URL": args.broker_url or "filesystem://localhost/",
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
        "DJANGO_SETTINGS_MODULE": "clinreview.settings",
    }


# --- child processes (Django set up with the bench's environment) ----------------------------


def _django():
    import django

    django.setup()


def child_setup(name: str, items: int, reviewers: int) -> None:
    """Seed the benchmark, then a session and an API token per reviewer (as JSON on stdout)."""
    _django()
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command
    from django.test import override_settings

    from annotations.services.accounts import api_token_create
    from annotations.services.seed import seed_reviewers

    with override_settings(DEBUG=True):  # seed_load is a development command
        call_command("seed_load", name, "--items", str(items), "--reviewers", str(reviewers))
    people = []
    for user in seed_reviewers(prefix=name, count=reviewers, password=PASSWORD):
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        token, _expiry = api_token_create(user=user)
        people.append({"username": user.username, "session": store.session_key, "token": token})
    print(json.dumps(people))


def child_verify() -> None:
    """Read [[username, item id], ...] (2xx reviews) on stdin; print how many are not stored."""
    _django()
    from annotations.models import Review

    written = [tuple(pair) for pair in json.load(sys.stdin)]
    items = {item_id for _name, item_id in written}
    stored = set()
    ids = sorted(items)
    for start in range(0, len(ids), 900):
        rows = Review.objects.filter(item_id__in=ids[start : start + 900])
        stored.update(rows.values_list("reviewer__username", "item_id"))
    print(json.dumps({"missing": sum(1 for pair in written if pair not in stored)}))


# --- the server ------------------------------------------------------------------------------


def start_server(args, env: dict[str, str]) -> subprocess.Popen | None:
    address = f"127.0.0.1:{args.port}"
    if args.server == "external":
        return None
    if args.server == "runserver":
        command = [PYTHON, "manage.py", "runserver", "--noreload", "--skip-checks", address]
    else:
        command = [PYTHON, "-m", "gunicorn", "clinreview.wsgi", "-b", address, "-k", "gthread"]
        command += ["--preload"]  # Django imported once, before the workers fork
        command += ["--workers", str(args.workers), "--threads", str(args.threads)]
        command += ["--log-level", "warning"]
    # runserver logs every request: kept out of the report.
    quiet = subprocess.DEVNULL if args.server == "runserver" else None
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=quiet, stderr=quiet)
    wait_for_server(args.port, server)
    return server


def wait_for_server(port: int, server: subprocess.Popen) -> None:
    deadline, last = time.monotonic() + 120, "no answer"
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/healthz")
            response = connection.getresponse()
            if response.status == 200:
                return
            last = f"HTTP {response.status}: {response.read()[:200]!r}"
        except OSError as error:
            last = repr(error)
        time.sleep(0.5)
    server.terminate()
    server.wait(timeout=20)
    raise SystemExit(f"the server did not start ({last})")


# --- the clinicians --------------------------------------------------------------------------


class Clinician(threading.Thread):
    """One reviewer on a keep-alive connection: next item, think, verdict, and again."""

    def __init__(self, args, person: dict, stop_at: float, seed: int) -> None:
        super().__init__(daemon=True)
        self.args, self.person, self.stop_at = args, person, stop_at
        self.random = random.Random(seed)
        self.cookies = {"sessionid": person["session"]}
        self.timings: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)  # 5xx per kind
        self.refused = 0  # other non-2xx answers
        self.written: list[tuple[str, int]] = []
        self.dropped = 0  # requests whose connection failed (no HTTP answer)
        self.connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=120)
        self.last_used = 0.0

    def request(self, kind: str, method: str, path: str, body: str = "", headers=None):
        sent = {**(headers or {})}
        if self.args.mode == "api":
            sent["Authorization"] = f"Token {self.person['token']}"
        else:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if time.monotonic() - self.last_used > IDLE_SECONDS:
            # The server has closed an idle keep-alive connection by now (gunicorn after 2 s),
            # as a browser finds: a new connection, as it opens.
            self.connection.close()
        start = time.perf_counter()
        try:
            self.connection.request(method, path, body=body or None, headers=sent)
            response = self.connection.getresponse()
            text = response.read().decode()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.dropped += 1
            return None, ""
        self.last_used = time.monotonic()
        self.timings[kind].append((time.perf_counter() - start) * 1000)
        if response.status >= 500:
            self.errors[kind] += 1
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response, text

    def think(self) -> None:
        low, high = self.args.think
        pause = self.random.uniform(low, high)
        time.sleep(max(0.0, min(pause, self.stop_at - time.monotonic())))

    def verdict(self) -> dict:
        if self.random.random() < 0.8:
            return {"verdict": "accept"}
        return {"verdict": "reject", "reason": "ambiguous"}

    def run(self) -> None:
        try:
            (self.run_api if self.args.mode == "api" else self.run_html)()
        finally:
            self.connection.close()

    def run_api(self) -> None:
        while time.monotonic() < self.stop_at:
            response, text = self.request("next item (GET)", "GET", "/api/queue/next/")
            if response is None or response.status != 200:
                return
            item = json.loads(text)
            self.think()
            if time.monotonic() >= self.stop_at:
                return
            body = json.dumps({**self.verdict(), "version": item["version"], "seconds_spent": 2})
            response, _text = self.request(
                "submit (POST)",
                "POST",
                f"/api/items/{item['id']}/reviews/",
                body,
                {"Content-Type": "application/json"},
            )
            if response is not None and 200 <= response.status < 300:
                self.written.append((self.person["username"], item["id"]))
            elif response is not None and response.status < 500:
                self.refused += 1

    def run_html(self) -> None:
        response, _text = self.request("queue (GET)", "GET", "/review/")
        path = response.headers.get("Location", "") if response is not None else ""
        response, page = self.request("review page (GET)", "GET", path) if path else (None, "")
        while response is not None and time.monotonic() < self.stop_at:
            match, token, version = ITEM_PATH.match(path), CSRF_INPUT.search(page), None
            version = VERSION_INPUT.search(page)
            if response.status != 200 or not (match and token and version):
                return
            self.think()
            if time.monotonic() >= self.stop_at:
                return
            form = {**self.verdict(), "version": version.group(1), "seconds_spent": "2"}
            form["csrfmiddlewaretoken"] = token.group(1)
            body = "&".join(f"{key}={value}" for key, value in form.items())
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "HX-Request": "true",
                "Referer": f"http://127.0.0.1:{self.args.port}{path}",
            }
            response, page = self.request("submit + next page (POST)", "POST", path, body, headers)
            if response is not None and response.status == 200:
                self.written.append((self.person["username"], int(match.group(1))))
                path = response.headers.get("HX-Push-Url", "")
            elif response is not None and response.status < 500:
                self.refused += 1


# --- measuring -------------------------------------------------------------------------------


def percentiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (values[0],) * 3 if values else (float("nan"),) * 3
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), cuts[94], cuts[98]


def verify(env: dict[str, str], written: list[tuple[str, int]]) -> int:
    output = subprocess.run(
        [PYTHON, __file__, "--verify"],
        input=json.dumps(written),
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])["missing"]


def server_cpu(server: subprocess.Popen | None) -> float:
    """CPU seconds used so far by the server and its worker processes (Linux /proc): what a
    request costs whatever else the machine runs, where wall-clock latency also counts the wait
    for a core."""
    if server is None:
        return float("nan")
    tick = os.sysconf("SC_CLK_TCK")
    pids, total = [server.pid], 0.0
    while pids:
        pid = pids.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            for task in Path(f"/proc/{pid}/task").iterdir():
                pids += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def warm_up(args, person: dict) -> None:
    """Each server process's first requests import the views: not part of the measurement.
    GETs only: nothing is reviewed."""
    clinician = Clinician(args, person, stop_at=0.0, seed=0)
    path = "/api/queue/next/" if args.mode == "api" else "/review/"
    for _ in range(4 * args.workers):
        clinician.request("warm-up", "GET", path)
        clinician.connection.close()  # the next request may reach another process


def step(args, env, people: list[dict], count: int, server) -> dict:
    cpu_before = server_cpu(server)
    stop_at = time.monotonic() + args.duration
    clinicians = [Clinician(args, people[n], stop_at, seed=n) for n in range(count)]
    started = time.monotonic()
    for clinician in clinicians:
        clinician.start()
    for clinician in clinicians:
        clinician.join()
    elapsed = time.monotonic() - started
    cpu = server_cpu(server) - cpu_before
    timings: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for clinician in clinicians:
        for kind, values in clinician.timings.items():
            timings[kind].extend(values)
        for kind, n in clinician.errors.items():
            errors[kind] += n
    written = [pair for clinician in clinicians for pair in clinician.written]
    lost = verify(env, written)
    print(f"\n{count} reviewers, think {args.think[0]:g}-{args.think[1]:g} s, {elapsed:.0f} s:")
    worst = 0.0
    for kind, values in sorted(timings.items()):
        p50, p95, p99 = percentiles(values)
        worst = max(worst, p95)
        print(
            f"  {kind:<26} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  p99 {p99:7.1f} ms  "
            f"({len(values)} requests, {errors.get(kind, 0)} 5xx)"
        )
    refused = sum(c.refused for c in clinicians)
    dropped = sum(c.dropped for c in clinicians)
    print(
        f"  throughput {len(written) / elapsed:.1f} reviews/s; {sum(errors.values())} 5xx, "
        f"{refused} refused (4xx), {dropped} connections failed; "
        f"writes: {len(written)} 2xx reviews, {lost} lost; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    requests = sum(len(values) for values in timings.values())
    if requests and server is not None:
        print(
            f"  server CPU {cpu:.1f} s: {1000 * cpu / requests:.1f} ms per request, "
            f"{1000 * cpu / max(1, len(written)):.1f} ms per review"
        )
    failures = sum(errors.values()) + dropped
    return {"reviewers": count, "p95": worst, "errors": failures, "lost": lost}


def parse_think(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    return float(low), float(high or low)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="", help="default: a fresh SQLite file")
    parser.add_argument("--broker-url", default="", help="default: a file-system broker")
    parser.add_argument("--reviewers", default="50", help="a count, or counts: 10,25,50")
    parser.add_argument("--think", type=parse_think, default=(1.0, 3.0), help="seconds, e.g. 1-3")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per count")
    parser.add_argument("--mode", choices=("api", "html"), default="api")
    parser.add_argument(
        "--server",
        choices=("gunicorn", "runserver", "external"),
        default="gunicorn",
        help="external: a server already on --port with the same database (bin/scale-out)",
    )
    parser.add_argument("--workers", type=int, default=3, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads each")
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--port", type=int, default=8110)
    parser.add_argument("--budget-ms", type=float, default=300.0)
    parser.add_argument("--setup", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.setup:
        return child_setup(args.setup[0], int(args.setup[1]), int(args.setup[2]))
    if args.verify:
        return child_verify()
    counts = sorted({int(n) for n in args.reviewers.split(",")})
    with tempfile.TemporaryDirectory(prefix="review-load-") as folder:
        env = environment(args, Path(folder))
        started = time.monotonic()
        subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        name = f"load-{int(time.time())}"
        output = subprocess.run(
            [PYTHON, __file__, "--setup", name, str(args.items), str(max(2, *counts))],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        people = json.loads(output.strip().splitlines()[-1])
        database = env["DATABASE_URL"].split("@")[-1]
        server = args.server
        if server == "gunicorn":
            server += f" ({args.workers} processes × {args.threads} threads)"
        print(
            f"{name}: {args.items} items double-assigned to {len(people)} reviewers in "
            f"{time.monotonic() - started:.0f} s; {args.mode} on {server}; database {database}"
        )
        server = start_server(args, env)
        try:
            warm_up(args, people[0])
            results = [step(args, env, people, count, server) for count in counts]
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    server.kill()
    held = [r["reviewers"] for r in results if r["p95"] <= args.budget_ms and not r["errors"]]
    held = [n for n in held if not next(r["lost"] for r in results if r["reviewers"] == n)]
    print(
        f"\nlargest reviewer count with p95 ≤ {args.budget_ms:g} ms, no 5xx, no lost write: "
        f"{max(held) if held else 'none of ' + args.reviewers}"
    )


if __name__ == "__main__":
    main()
