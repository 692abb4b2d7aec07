"""CT degradations simulated through the sinogram: sparse views, limited angle, low dose.

The slice (normalised to [0, 1], air = 0) is read as an attenuation map, projected with the
Radon transform, degraded in projection space and reconstructed by filtered back-projection
(ramp filter). Radon is slow, so the physics runs on a copy of at most WORK_SIZE pixels; only
the difference between the degraded and a clean reconstruction of that copy is scaled back
and added to the full-resolution slice, which keeps the fine detail the copy lost.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from skimage.transform import iradon, radon, resize

from ._common import Params, draw, on_luminance

WORK_SIZE = 192
FULL_VIEWS = 180  # one projection per degree over 180 degrees: a clean parallel-beam scan
# Sinogram scaled so that the longest ray has this line integral: about 30 cm of water,
# so a low dose makes the thickest paths photon-starved like in a real abdomen.
MAX_LINE_INTEGRAL = 6.0

SPARSE_VIEWS = {"mild": (60, 80), "severe": (18, 24)}
LIMITED_RANGE_DEGREES = {"mild": (150.0, 160.0), "severe": (100.0, 120.0)}
# photons per ray on a 256 px grid; scaled with the working grid so that the noise in the
# reconstruction (whose variance grows with the square of the grid size) does not depend on it
INCIDENT_PHOTONS = {"mild": (4.0e5, 6.0e5), "severe": (3.0e4, 5.0e4)}
PHOTON_GRID = 256

SinogramDegrader = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def sparse_view(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Keep a few evenly spaced projections: streaks radiating from high-contrast edges."""
    n_views = int(rng.integers(SPARSE_VIEWS[severity][0], SPARSE_VIEWS[severity][1] + 1))
    start = int(rng.integers(0, FULL_VIEWS))
    kept = np.round(np.linspace(0, FULL_VIEWS, n_views, endpoint=False)).astype(int)
    kept = np.unique((kept + start) % FULL_VIEWS)

    def keep_views(sinogram: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return sinogram[:, kept], theta[kept]

    out = on_luminance(x, lambda gray: _through_sinogram(gray, keep_views))
    return out, {"n_views": int(kept.size), "first_view_degrees": start, "full_views": FULL_VIEWS}


def limited_angle(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Projections cover only part of the half-turn: edges along the missing directions smear."""
    span = draw(rng, *LIMITED_RANGE_DEGREES[severity], digits=1)
    start = draw(rng, 0.0, 180.0, digits=1)

    def cut_range(sinogram: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        inside = (theta - start) % 180.0 < span
        return sinogram[:, inside], theta[inside]

    out = on_luminance(x, lambda gray: _through_sinogram(gray, cut_range))
    return out, {"start_degrees": start, "span_degrees": span, "full_views": FULL_VIEWS}


def low_dose(x: np.ndarray, severity: str, rng: np.random.Generator) -> tuple[np.ndarray, Params]:
    """Fewer incident photons: Poisson counting noise, streaks along the most attenuating rays."""
    photons = round(draw(rng, *INCIDENT_PHOTONS[severity], digits=0))
    per_ray = photons * (_work_size(x) / PHOTON_GRID) ** 2

    def count_photons(sinogram: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        counts = rng.poisson(per_ray * np.exp(-sinogram))
        # a detector that saw no photon reads the lowest measurable count, not infinity
        return -np.log(np.maximum(counts, 1) / per_ray), theta

    out = on_luminance(x, lambda gray: _through_sinogram(gray, count_photons))
    params: Params = {"incident_photons": photons, "photons_per_ray": round(per_ray, 3)}
    params["max_line_integral"] = MAX_LINE_INTEGRAL
    return out, params


def _work_size(x: np.ndarray) -> int:
    return min(max(x.shape[:2]), WORK_SIZE)


def _through_sinogram(gray: np.ndarray, degrade: SinogramDegrader) -> np.ndarray:
    """Project, degrade, reconstruct; return `gray` plus the artifact at full resolution."""
    side = max(gray.shape)
    square = _pad_to_square(np.clip(gray, 0.0, 1.0), side)
    work = _work_size(gray)
    small = resize(square, (work, work), order=1, anti_aliasing=True) if work < side else square
    theta = np.arange(FULL_VIEWS, dtype=np.float64) * (180.0 / FULL_VIEWS)
    # circle=False pads the slice to its diagonal, so the corners are projected too
    sinogram = radon(small, theta=theta, circle=False)
    peak = float(sinogram.max())
    scale = MAX_LINE_INTEGRAL / peak if peak > 0 else 1.0
    degraded_sinogram, degraded_theta = degrade(sinogram * scale, theta)
    reference = _fbp(sinogram, theta, work)
    degraded = _fbp(degraded_sinogram / scale, degraded_theta, work)
    artifact = degraded - reference
    if work < side:
        artifact = resize(artifact, (side, side), order=1)
    return gray + _crop_center(artifact, gray.shape)


def _fbp(sinogram: np.ndarray, theta: np.ndarray, size: int) -> np.ndarray:
    return iradon(sinogram, theta=theta, output_size=size, circle=False, filter_name="ramp")


def _pad_to_square(gray: np.ndarray, side: int) -> np.ndarray:
    top, left = (side - gray.shape[0]) // 2, (side - gray.shape[1]) // 2
    square = np.zeros((side, side))
    square[top : top + gray.shape[0], left : left + gray.shape[1]] = gray
    return square


def _crop_center(square: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    top, left = (square.shape[0] - shape[0]) // 2, (square.shape[1] - shape[1]) // 2
    return square[top : top + shape[0], left : left + shape[1]]
