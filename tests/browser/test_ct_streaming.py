"""A real-size case (four phases of 512×512×200) in the viewer: every phase's slice is painted
before its volume has arrived, scrolling to the far end works while chunks stream, and the
tab holds a bounded window of voxels, not the volumes."""

from __future__ import annotations

import pytest

from annotations.imaging import chunks
from annotations.models import Case
from annotations.services.cases import gastricx_import
from annotations.services.review import assignments_create
from tests.browser.conftest import screenshot
from tests.factories import make_personas
from tests.realsize import REAL_SIZE_CASE, real_size_root  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.realsize,
    pytest.mark.django_db(transaction=True),
]

MIB = 1024 * 1024
# What the viewer may hold for four phases: 4 × 48 MiB of chunks (ct_viewer.js
# PHASE_BUDGET_BYTES) and a few single slices, plus the page's own heap. The four volumes
# themselves are 4 × 100 MiB.
TAB_BOUND_BYTES = 256 * MIB
HUNDRED_MBIT = 100_000_000 / 8  # bytes per second


@pytest.fixture
def real_case(real_size_root):  # noqa: F811
    people = make_personas()
    benchmark = gastricx_import(path=real_size_root, name="gx-real", user=people["curator"])
    assignments_create(benchmark=benchmark, reviewers=[people["reviewer"], people["reviewer2"]])
    return people, Case.objects.get(case_id=REAL_SIZE_CASE)


def network_log(page) -> list[dict]:
    """The browser's own log of the voxel requests: URL, start and end (ms, page clock)."""
    return page.evaluate(
        """() => performance.getEntriesByType('resource')
            .filter(e => e.name.includes('/volumes/'))
            .map(e => ({url: new URL(e.name).pathname, start: e.startTime, end: e.responseEnd}))"""
    )


def test_a_real_size_case_paints_each_phase_first_and_streams_within_a_bound(
    page, live_server, login, real_case
):
    people, case = real_case
    volumes = {v.phase: v for v in case.volumes.all()}
    assert len(volumes) == 4 and all(v.shape == (200, 512, 512) for v in volumes.values())
    login(people["reviewer"].username)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    # A hospital link: 100 Mbit/s each way, 2 ms latency.
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": 2,
            "downloadThroughput": HUNDRED_MBIT,
            "uploadThroughput": HUNDRED_MBIT,
        },
    )
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(f"{live_server.url}/cases/{case.pk}/")
    for phase in volumes:
        page.wait_for_selector(f'.ct-viewport[data-phase="{phase}"][data-painted]')

    # Scroll the arterial phase to its last slice through its slider while the chunks stream.
    slider = page.locator('.ct-viewport[data-phase="arterial"] input.ct-slider')
    slider.focus()
    page.keyboard.press("End")
    page.wait_for_function(
        "document.querySelector('.ct-viewport[data-phase=arterial]').dataset.shownZ === '199'"
    )
    far_end_painted = page.evaluate("performance.now()")
    assert page.get_attribute("#ct-viewer", "data-loaded") is None  # still streaming
    page.wait_for_selector("#ct-viewer[data-loaded=true]", timeout=120_000)

    log = network_log(page)
    assert not any(entry["url"].endswith("/voxels") for entry in log)  # never the whole block
    for phase, volume in volumes.items():
        base = f"/volumes/{volume.pk}/"
        painted = float(page.get_attribute(f'.ct-viewport[data-phase="{phase}"]', "data-painted"))
        slices = [
            e for e in log if e["url"].startswith(base + "slices/") and e["url"].endswith(".i16")
        ]
        chunk_log = [e for e in log if e["url"].startswith(base + "chunks/")]
        assert slices and chunk_log, phase
        # Its first slice came alone and was painted before any of its chunks had arrived...
        assert min(e["end"] for e in slices) <= painted < min(e["end"] for e in chunk_log)
        # ... and the phase never held (nor fetched) more than a window around its slices.
        assert len({e["url"] for e in chunk_log}) < chunks.chunk_count(volume.size_z)
    # The far end was shown while chunks were still arriving.
    assert far_end_painted < max(e["end"] for e in log if "/chunks/" in e["url"])

    held = page.evaluate("ctViewer.viewports.map(v => v.store.residentBytes())")
    assert all(bytes_ <= 48 * MIB + 8 * 512 * 512 * 2 for bytes_ in held)
    cdp.send("HeapProfiler.enable")
    cdp.send("HeapProfiler.collectGarbage")
    heap = cdp.send("Runtime.getHeapUsage")
    tab = heap["usedSize"] + heap.get("backingStorageSize", 0)
    assert tab <= TAB_BOUND_BYTES, f"tab holds {tab / MIB:.0f} MiB"
    assert heap.get("backingStorageSize", 0) >= sum(held)  # the measure sees the voxels
    screenshot(page, "ct_streaming_real_size")
