"""Histopathology slide artifacts drawn over the tile: blood cells, dark spots, air bubbles.

Colours are RGB in [0, 1]; on a grey image the same overlays are drawn with the colours'
luminance, so a grey scan of a slide shows them as intensity changes.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from ._common import LUMA_WEIGHTS, Params, blend, draw, patch_grid, short_side, soft_edge

RBC_RIM = np.array([0.78, 0.16, 0.2])
RBC_PALLOR = np.array([0.92, 0.48, 0.5])  # biconcave disc: thinner, paler centre
# (number of clusters, fraction of the tile covered by cells)
BLOOD_CELLS = {"mild": ((2, 3), 0.06), "severe": ((5, 7), 0.3)}
MAX_CELLS = 4000
# (number of spots, radius as a fraction of the short side, darkness)
DARK_SPOTS = {
    "mild": ((3, 4), (0.055, 0.075), (0.5, 0.6)),
    "severe": ((6, 8), (0.08, 0.12), (0.75, 0.85)),
}
SPOT_COLOUR = np.array([0.1, 0.07, 0.09])
# (number of bubbles, radius as a fraction of the short side)
BUBBLES = {"mild": ((1, 1), (0.1, 0.14)), "severe": ((3, 5), (0.16, 0.24))}


def blood_cell_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Clumps of red blood cells lying on the section, each a small disc with a pale centre."""
    (low, high), coverage = BLOOD_CELLS[severity]
    h, w = x.shape[:2]
    radius = max(2.5, 0.022 * short_side(x))
    n_cells = min(MAX_CELLS, max(3, round(coverage * h * w / (np.pi * radius**2 * 0.9))))
    clusters = [
        [draw(rng, 0, h), draw(rng, 0, w), draw(rng, 0.08, 0.16) * short_side(x)]
        for _ in range(int(rng.integers(low, high + 1)))
    ]
    rim, pallor = _paint(x, RBC_RIM), _paint(x, RBC_PALLOR)
    out = x.copy()
    for k in range(n_cells):
        cy, cx, spread = clusters[k % len(clusters)]
        centre = (cy + rng.normal(0, spread), cx + rng.normal(0, spread))
        a = radius * rng.uniform(0.85, 1.15)
        b = a * rng.uniform(0.7, 1.0)  # tilted discs look elliptical
        _draw_cell(out, centre, (a, b, rng.uniform(0, np.pi)), rim, pallor)
    params: Params = {
        "n_cells": n_cells,
        "cell_radius_px": round(radius, 3),
        "clusters": [[round(c, 3) for c in cluster] for cluster in clusters],
    }
    return out, params


def dark_spots_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Dust, pigment or debris: dark irregular blotches with soft edges."""
    (low, high), radius_range, darkness_range = DARK_SPOTS[severity]
    h, w = x.shape[:2]
    out = x.copy()
    colour = _paint(x, SPOT_COLOUR)
    spots = []
    for _ in range(int(rng.integers(low, high + 1))):
        cy, cx = draw(rng, 0, h), draw(rng, 0, w)
        radius = draw(rng, *radius_range) * short_side(x)
        darkness = draw(rng, *darkness_range)
        # a few low harmonics of the outline make a blotch instead of a perfect disc
        wobble = [round(float(v), 4) for v in rng.normal(0.0, 0.12, size=4)]
        spots.append(
            {
                "centre": [cy, cx],
                "radius_px": round(radius, 3),
                "darkness": darkness,
                "wobble": wobble,
            }
        )
        grid = patch_grid(x.shape, cy, cx, radius * 1.8)
        if grid is None:
            continue
        box, dy, dx = grid
        angle = np.arctan2(dy, dx)
        outline = (
            1.0
            + wobble[0] * np.cos(2 * angle + wobble[1] * 10)
            + wobble[2] * np.sin(3 * angle + wobble[3] * 10)
        )
        rho = np.hypot(dy, dx) / (radius * np.clip(outline, 0.6, 1.4))
        alpha = darkness / (1.0 + np.exp((rho - 1.0) / 0.12))
        out[box] = blend(out[box], colour, alpha)
    return out, {"spots": spots}


def bubble_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Air trapped under the coverslip: dark refracting rim, bright inner halo, blurred magnified inside."""
    (low, high), radius_range = BUBBLES[severity]
    h, w = x.shape[:2]
    out = x.copy()
    bubbles = []
    for _ in range(int(rng.integers(low, high + 1))):
        cy, cx = draw(rng, 0.1 * h, 0.9 * h), draw(rng, 0.1 * w, 0.9 * w)
        radius = max(3.0, draw(rng, *radius_range) * short_side(x))
        bubbles.append({"centre": [cy, cx], "radius_px": round(radius, 3)})
        _draw_bubble(out, cy, cx, radius)
    return out, {"bubbles": bubbles}


def _paint(x: np.ndarray, rgb: np.ndarray) -> np.ndarray | float:
    return rgb if x.ndim == 3 else float(rgb @ LUMA_WEIGHTS)


def _draw_cell(
    out: np.ndarray,
    centre: tuple[float, float],
    shape: tuple[float, float, float],
    rim: np.ndarray | float,
    pallor: np.ndarray | float,
) -> None:
    a, b, angle = shape
    grid = patch_grid(out.shape, centre[0], centre[1], a + 1.5)
    if grid is None:
        return
    box, dy, dx = grid
    along = dx * np.cos(angle) + dy * np.sin(angle)
    across = -dx * np.sin(angle) + dy * np.cos(angle)
    rho = np.hypot(along / a, across / b)
    alpha = 0.9 * soft_edge(rho, 1.0 / a)
    centre_weight = np.exp(-((rho / 0.45) ** 2))
    cw = centre_weight[..., None] if out.ndim == 3 else centre_weight
    colour = rim * (1.0 - cw) + pallor * cw
    out[box] = blend(out[box], colour, alpha)


def _draw_bubble(out: np.ndarray, cy: float, cx: float, radius: float) -> None:
    grid = patch_grid(out.shape, cy, cx, radius + 2.0)
    if grid is None:
        return
    box, dy, dx = grid
    rho = np.hypot(dy, dx) / radius
    patch = out[box]
    # the bubble acts as a weak lens: the inside shows a magnified, slightly blurred view
    magnify = 0.85 + 0.15 * np.minimum(rho, 1.0) ** 2
    coords = [dy * magnify + cy - box[0].start, dx * magnify + cx - box[1].start]
    sigma = 0.6 + 0.02 * radius
    channels = [patch[..., c] for c in range(patch.shape[2])] if patch.ndim == 3 else [patch]
    lensed = np.stack(
        [
            ndimage.map_coordinates(
                ndimage.gaussian_filter(ch, sigma), coords, order=1, mode="nearest"
            )
            for ch in channels
        ],
        axis=-1,
    )
    lensed = lensed if patch.ndim == 3 else lensed[..., 0]
    inside = soft_edge(rho, 2.0 / radius)
    patch = blend(patch, 0.85 * lensed + 0.15, inside)
    ring_width = max(0.035, 1.2 / radius)
    dark_rim = 0.75 * np.exp(-(((rho - 0.95) / ring_width) ** 2))
    bright_halo = 0.35 * np.exp(-(((rho - 0.84) / ring_width) ** 2))
    patch = blend(patch, 0.05, dark_rim)
    out[box] = blend(patch, 1.0, bright_halo)
