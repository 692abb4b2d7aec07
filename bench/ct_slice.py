"""Server time to render a windowed 512×512 CT slice as PNG from the stored volume (budget ≤ 5 ms).

Run: ``.venv/bin/python bench/ct_slice.py``. The baseline, measured in the same run, is the
least any server could do: copy the raw slice and zlib-compress it at level 1. The volume is
stored as imports store it (compressed chunks, ``imaging.chunks``: the slice is inflated from
its chunk); the ``.npy`` memmap of volumes imported before chunks is measured beside it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotations.imaging.chunks import ChunkedVolume, write_chunked_volume  # noqa: E402
from annotations.imaging.synthcase import CT_NOISE_HU  # noqa: E402
from annotations.imaging.synthct import make_abdomen_phantom  # noqa: E402
from annotations.imaging.volume import open_voxel_cache, write_voxel_cache  # noqa: E402
from annotations.imaging.window import WINDOW_PRESETS, render_slice_png  # noqa: E402

SHAPE = (60, 512, 512)
ROUNDS = 300
BUDGET_MS = 5.0


def measure(action: Callable[[int], object], slices: int) -> list[float]:
    """Milliseconds per call over ``ROUNDS`` calls, cycling through the slices."""
    timings = []
    for round_number in range(ROUNDS):
        start = time.perf_counter()
        action(round_number % slices)
        timings.append((time.perf_counter() - start) * 1000.0)
    return timings


def summary(name: str, timings: list[float]) -> tuple[float, float]:
    median = statistics.median(timings)
    p95 = statistics.quantiles(timings, n=20)[-1]
    print(f"{name:<34} median {median:6.3f} ms   p95 {p95:6.3f} ms")
    return median, p95


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        hu = make_abdomen_phantom(SHAPE, phase="venous", seed=1, noise_sigma=CT_NOISE_HU)
        cache_path = write_voxel_cache(hu, Path(folder) / "venous.npy")
        stored = ChunkedVolume(write_chunked_volume([hu], Path(folder) / "venous"))
        voxels = open_voxel_cache(cache_path)
        width, level = WINDOW_PRESETS["soft_tissue"]
        render_slice_png(voxels, 0, width, level)  # builds the window table once
        raw = measure(lambda z: np.copy(voxels[z]), SHAPE[0])
        baseline = measure(lambda z: zlib.compress(np.copy(voxels[z]).tobytes(), 1), SHAPE[0])
        rendered = measure(lambda z: render_slice_png(stored, z, width, level), SHAPE[0])
        from_path = measure(
            lambda z: render_slice_png(Path(folder) / "venous", z, width, level), SHAPE[0]
        )
        memmapped = measure(lambda z: render_slice_png(voxels, z, width, level), SHAPE[0])
    print(f"CT slice {SHAPE[1]}×{SHAPE[2]} of a {SHAPE} int16 volume, {ROUNDS} rounds")
    summary("raw int16 slice copy", raw)
    base_median, _ = summary("baseline copy + zlib level 1", baseline)
    median, p95 = summary("windowed PNG (stored chunks)", rendered)
    path_median, _ = summary("windowed PNG (opening the index)", from_path)
    summary("windowed PNG (.npy memmap, before)", memmapped)
    print(
        f"ratio to baseline: {median / base_median:.2f}× (opening the index: {path_median / base_median:.2f}×)"
    )
    verdict = "OK" if median <= BUDGET_MS else "OVER BUDGET"
    # p95 mostly measures the scheduler on a shared machine, so the verdict uses the median.
    print(f"budget {BUDGET_MS} ms: median {median:.3f} ms, p95 {p95:.3f} ms → {verdict}")
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
