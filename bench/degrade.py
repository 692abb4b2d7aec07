"""Time every degradation at both severities on a 512 x 512 slice.

Run: python bench/degrade.py. As every ClinReview bench does, it prints each figure as a
ratio to a baseline measured in the same run: np.copy plus a 3 x 3 uniform filter of the
same image, the cheapest thing one could call "processing an image".
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotations.imaging import phantoms  # noqa: E402
from annotations.imaging.degrade import KINDS, SEVERITIES, apply, kinds_for_modality  # noqa: E402

SIZE = 512
REPEATS = 3


def median_ms(work: Callable[[], object], repeats: int = REPEATS) -> float:
    """Median wall time of `repeats` calls, in milliseconds, after one warm-up call."""
    work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def subject_for(kind: str) -> tuple[str, np.ndarray]:
    if kind in kinds_for_modality("CT") and kind not in kinds_for_modality("X-ray"):
        return "CT", phantoms.ct_slice(SIZE)
    if kind in kinds_for_modality("MRI") and kind not in kinds_for_modality("X-ray"):
        return "MRI", phantoms.mri_brain(SIZE)
    if kind in kinds_for_modality("Histopathology") and kind not in kinds_for_modality("X-ray"):
        return "Histopathology", phantoms.histopathology_tile(SIZE)
    return "X-ray", phantoms.xray_chest(SIZE)


def main() -> None:
    baseline_image = phantoms.ct_slice(SIZE)
    baseline = median_ms(
        lambda: ndimage.uniform_filter(np.copy(baseline_image), size=3), repeats=20
    )
    print(f"baseline (np.copy + 3x3 uniform_filter, {SIZE}x{SIZE} int16): {baseline:.2f} ms\n")
    print(f"{'kind':<24} {'severity':<8} {'subject':<15} {'ms/image':>9} {'x baseline':>11}")
    for kind in KINDS:
        modality, image = subject_for(kind)
        for severity in SEVERITIES:
            ms = median_ms(lambda: apply(image, kind, severity, seed=0, modality=modality))  # noqa: B023
            print(f"{kind:<24} {severity:<8} {modality:<15} {ms:>9.1f} {ms / baseline:>11.1f}")


if __name__ == "__main__":
    main()
