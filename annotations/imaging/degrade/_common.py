"""Shared helpers of the degradation kinds: random draws, geometry, grey-level physics on RGB."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Params = dict[str, object]


class DegradationError(ValueError):
    """A degradation cannot be applied: unknown kind/severity, wrong modality or unusable image."""


def draw(rng: np.random.Generator, low: float, high: float, digits: int = 4) -> float:
    """Uniform draw rounded so that the stored parameter reproduces the output exactly."""
    return round(float(rng.uniform(low, high)), digits)


def draw_sign(rng: np.random.Generator) -> int:
    return 1 if rng.random() < 0.5 else -1


def short_side(x: np.ndarray) -> int:
    return int(min(x.shape[0], x.shape[1]))


def spatial_sigma(x: np.ndarray, sigma: float) -> tuple[float, ...]:
    """Gaussian sigma that blurs rows and columns but never mixes colour channels."""
    return (sigma, sigma, 0.0) if x.ndim == 3 else (sigma, sigma)


LUMA_WEIGHTS = np.array([0.299, 0.587, 0.114])


def luminance(x: np.ndarray) -> np.ndarray:
    """Grey level of an H x W x 3 image (ITU-R BT.601); a 2D image is already grey."""
    return x if x.ndim == 2 else x @ LUMA_WEIGHTS


def on_luminance(x: np.ndarray, degrade_gray: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Run a grey-level physical model (CT, MRI) and carry its change over to every channel.

    CT and MRI are grey by nature; an RGB copy of one gets the same artifact on each channel
    instead of three independent (and three times slower) simulations.
    """
    if x.ndim == 2:
        return degrade_gray(x)
    gray = luminance(x)
    return x + (degrade_gray(gray) - gray)[..., None]


def blend(x: np.ndarray, paint: np.ndarray | float, alpha: np.ndarray) -> np.ndarray:
    """Alpha-composite `paint` over `x`; `alpha` is 2D and broadcast over colour channels."""
    a = alpha[..., None] if x.ndim == 3 else alpha
    return x * (1.0 - a) + paint * a


def patch_grid(
    shape: tuple[int, ...], cy: float, cx: float, reach: float
) -> tuple[tuple[slice, slice], np.ndarray, np.ndarray] | None:
    """Slices of the bounding box of a round overlay and its pixel offsets from the centre.

    Overlays are drawn only inside their box so that thousands of small shapes stay cheap.
    Returns None when the box falls outside the image.
    """
    h, w = shape[0], shape[1]
    y0, y1 = max(0, int(np.floor(cy - reach))), min(h, int(np.ceil(cy + reach)) + 1)
    x0, x1 = max(0, int(np.floor(cx - reach))), min(w, int(np.ceil(cx + reach)) + 1)
    if y0 >= y1 or x0 >= x1:
        return None
    dy, dx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
    return (slice(y0, y1), slice(x0, x1)), dy - cy, dx - cx


def soft_edge(rho: np.ndarray, edge_width: float) -> np.ndarray:
    """Opacity 1 inside the unit contour (rho < 1), fading over `edge_width` (in rho units)."""
    return np.clip((1.0 - rho) / max(edge_width, 1e-6) + 0.5, 0.0, 1.0)
