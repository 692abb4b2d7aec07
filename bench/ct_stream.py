"""Time to first paint and to the whole volume of a real-size case in the CT viewer, on loopback
and on a 100 Mbit/s link (budget: every phase's slice painted before its volume has arrived).

Run: ``.venv/bin/python bench/ct_stream.py``. It builds a throw-away site in a temporary folder
(SQLite, media), imports one generated case of four 512×512×200 phases (σ 15 HU noise, as
DICOM), starts ``manage.py runserver`` on loopback and opens the case in headless Chromium, in a
fresh browser context (empty HTTP cache) per measure, the link throttled through CDP
``Network.emulateNetworkConditions``. Measured in the page (``performance.now()`` from the
navigation): the first paint of all four phases, the moment every phase holds its window of
chunks (``data-loaded``), and then the whole of every volume streamed as chunks. The baseline,
in the same run: the four whole-volume downloads (``/voxels``, gzip) the viewer used to need
before it painted anything.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ct_repaint import CHROMIUM, PASSWORD, USER, free_port, wait_for  # noqa: E402

SHAPE = (200, 512, 512)
HUNDRED_MBIT = 100_000_000 / 8  # bytes per second

WHOLE_JS = """async ([urls, chunked]) => {
  const start = performance.now();
  const get = async (url) => (await (await fetch(url, {cache: 'no-store'})).arrayBuffer()).byteLength;
  const sizes = await Promise.all(urls.map(async (url) => {
    if (!chunked) return get(url.voxels);
    let bytes = 0;
    for (let i = 0; i < url.chunks; i++) bytes += await get(url.chunk.replace('{i}', i));
    return bytes;
  }));
  return {ms: performance.now() - start, bytes: sizes.reduce((a, b) => a + b, 0)};
}"""

URLS_JS = """() => ctViewer.viewports.map((v) => ({
  voxels: v.volume.voxelsUrl, chunk: v.volume.chunkUrl, chunks: v.store.chunkCount}))"""


def build_site(var_dir: Path) -> int:
    """Migrate, create a reviewer and import one generated real-size case; its id."""
    os.environ["VAR_DIR"] = str(var_dir)
    os.environ.setdefault("DEBUG", "1")  # development settings: a DEID_SECRET for the import
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from annotations.access import REVIEWER
    from annotations.imaging.synthcase import write_synthetic_case
    from annotations.models import Case
    from annotations.services.cases import gastricx_import
    from annotations.services.review import assignments_create
    from annotations.services.users import user_ensure

    call_command("migrate", verbosity=0)
    reviewer, _ = user_ensure(username=USER, password=PASSWORD, roles=(REVIEWER,))
    write_synthetic_case(var_dir / "cases", "GX-BENCH", shape=SHAPE, seed=1)
    benchmark = gastricx_import(path=var_dir / "cases", name="bench")
    assignments_create(benchmark=benchmark, reviewers=[reviewer], per_item=1)
    return Case.objects.get(case_id="GX-BENCH").pk


def open_case(browser, base: str, case_pk: int, throughput: float | None):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    page.goto(f"{base}/login/")
    page.fill("#id_username", USER)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
    if throughput:
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        conditions = {"offline": False, "latency": 2}
        cdp.send(
            "Network.emulateNetworkConditions",
            {**conditions, "downloadThroughput": throughput, "uploadThroughput": throughput},
        )
    page.goto(f"{base}/cases/{case_pk}/")
    return context, page


def measure(browser, base: str, case_pk: int, throughput: float | None) -> dict:
    context, page = open_case(browser, base, case_pk, throughput)
    page.wait_for_selector("#ct-viewer[data-loaded=true]", timeout=600_000)
    painted = page.evaluate(
        "Math.max(...[...document.querySelectorAll('.ct-viewport')].map(v => +v.dataset.painted))"
    )
    window = page.evaluate(
        "performance.getEntriesByType('resource').filter(e => e.name.includes('/chunks/'))"
        ".reduce((end, e) => Math.max(end, e.responseEnd), 0)"
    )
    urls = page.evaluate(URLS_JS)
    chunked = page.evaluate(WHOLE_JS, [urls, True])
    whole = page.evaluate(WHOLE_JS, [urls, False])
    context.close()
    return {"painted": painted, "window": window, "chunked": chunked, "whole": whole}


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="ct-stream-") as folder:
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
        results = {}
        try:
            base = f"http://127.0.0.1:{port}"
            wait_for(f"{base}/healthz", seconds=180.0)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
                )
                measure(browser, base, case_pk, None)  # warm-up: the chunk files are made once
                for name, throughput in (("loopback", None), ("100 Mbit/s", HUNDRED_MBIT)):
                    results[name] = measure(browser, base, case_pk, throughput)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"one case, 4 phases of {SHAPE[2]}×{SHAPE[1]}×{SHAPE[0]}, times from navigation (ms)")
    for name, r in results.items():
        whole = r["whole"]["ms"]
        print(
            f"{name:<11} first paint (4 phases) {r['painted']:7.0f}   window held {r['window']:7.0f}"
            f"   whole volume as chunks {r['chunked']['ms']:7.0f}"
            f"   baseline whole /voxels {whole:7.0f}"
            f"   first paint = {r['painted'] / whole:5.3f}× baseline"
        )
        verdict = "OK" if r["painted"] < whole else "OVER BUDGET"
        print(f"{'':<11} budget: first paint before the volumes arrive: {verdict}")


if __name__ == "__main__":
    main()
