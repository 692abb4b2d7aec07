"""Browser repaint time of the CT viewer for a preset change and a slice step (budget ≤ 16 ms).

Run: ``.venv/bin/python bench/ct_repaint.py``. It builds a throw-away site in a temporary
folder (SQLite, media), imports one generated Gastric-X case with four 512×512 phases, starts
``manage.py runserver`` on loopback, opens the case in headless Chromium and measures inside the
page with ``performance.now()``: the median over many repaints of all four viewports, and a
baseline in the same run: four plain ``putImageData`` calls of 512×512 buffers (what any canvas
viewer must at least do).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHAPE = (24, 512, 512)
ROUNDS = 200
BUDGET_MS = 16.0
USER, PASSWORD = "bench-reviewer", "bench-password-123"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")

MEASURE_JS = """async (rounds) => {
  const viewer = window.ctViewer;
  const median = (values) => { const s = [...values].sort((a, b) => a - b); return s[s.length >> 1]; };
  const time = (action) => {
    const timings = [];
    for (let i = 0; i < rounds; i++) {
      const start = performance.now();
      action(i);
      timings.push(performance.now() - start);
    }
    return median(timings);
  };
  const preset = time((i) => viewer.applyPreset(i % 5));
  const first = viewer.viewports[0];
  const step = time((i) => viewer.scrollTo(first, first.z + (i % 2 ? -1 : 1)));
  const canvases = viewer.viewports.map((v) => {
    const canvas = document.createElement('canvas');
    canvas.width = v.nx; canvas.height = v.ny;
    const context = canvas.getContext('2d');
    const image = context.createImageData(v.nx, v.ny);
    new Uint32Array(image.data.buffer).fill(0xff808080);
    return [context, image];
  });
  const baseline = time(() => canvases.forEach(([context, image]) => context.putImageData(image, 0, 0)));
  return {preset, step, baseline, size: [first.nx, first.ny], viewports: viewer.viewports.length};
}"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def build_site(var_dir: Path) -> int:
    """Migrate, create a reviewer and import one generated case; return the case's id."""
    os.environ["VAR_DIR"] = str(var_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotations.access import REVIEWER
    from annotations.models import Case
    from annotations.services.cases import gastricx_import
    from annotations.services.review import assignments_create
    from annotations.services.users import user_ensure
    from tests.cases.builders import write_case

    call_command("migrate", verbosity=0)
    reviewer, _ = user_ensure(username=USER, password=PASSWORD, roles=(REVIEWER,))
    geometry = {
        phase: {"shape": SHAPE, "spacing": (0.7, 0.7, 5.0), "origin": (-180.0, -180.0, -400.0 + k)}
        for k, phase in enumerate(("non_contrast", "arterial", "venous", "delayed"))
    }
    write_case(var_dir / "cases", "GX-BENCH", phases=geometry)
    benchmark = gastricx_import(path=var_dir / "cases", name="bench")
    # A reviewer sees a case only with an assignment on its questions (selectors.visibility).
    assignments_create(benchmark=benchmark, reviewers=[reviewer], per_item=1)
    return Case.objects.get(case_id="GX-BENCH").pk


def wait_for(url: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server at {url} did not start")


def measure(base: str, case_pk: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{base}/login/")
        page.fill("#id_username", USER)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        page.goto(f"{base}/cases/{case_pk}/")
        page.wait_for_selector("#ct-viewer[data-loaded=true]", timeout=60_000)
        result = page.evaluate(MEASURE_JS, ROUNDS)
        browser.close()
    return result


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ct-repaint-") as folder:
        var_dir = Path(folder)
        print(f"building a case of 4 phases {SHAPE} ...", flush=True)
        case_pk = build_site(var_dir)
        port = free_port()
        env = {**os.environ, "VAR_DIR": str(var_dir), "DEBUG": "1"}
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(f"{base}/healthz", seconds=180.0)  # a loaded machine starts Django slowly
            result = measure(base, case_pk)
        finally:
            server.terminate()
            server.wait(timeout=10)
    width, height = result["size"]
    baseline = result["baseline"]
    print(f"{result['viewports']} viewports of {width}×{height}, median of {ROUNDS} repaints")
    for name, key in (
        ("preset change (LUT + 4 slices)", "preset"),
        ("slice step (4 slices)", "step"),
    ):
        value = result[key]
        verdict = "OK" if value <= BUDGET_MS else "OVER BUDGET"
        print(
            f"{name:<32} {value:6.2f} ms  = {value / baseline if baseline else float('inf'):5.1f}× "
            f"baseline   budget {BUDGET_MS:.0f} ms: {verdict}"
        )
    print(f"{'baseline (4 × putImageData)':<32} {baseline:6.2f} ms")


if __name__ == "__main__":
    main()
