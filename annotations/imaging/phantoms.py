"""Synthetic, realistic-looking medical images for tests, the contact sheet and demo data.

No patient data: every image is drawn from ellipses, smooth random textures and a seed.
Coordinates below are fractions of the image side so any size works.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage


def ct_slice(size: int = 256, *, seed: int = 0, dtype: type = np.int16) -> np.ndarray:
    """An abdominal CT slice in Hounsfield units (int16), or as stored values HU + 1024 (uint16)."""
    rng = np.random.default_rng(seed)
    hu = np.full((size, size), -1000.0)
    layers = [
        ((0.52, 0.5, 0.36, 0.44, 0.0), -100.0),  # subcutaneous fat
        ((0.52, 0.5, 0.33, 0.41, 0.0), 40.0),  # muscle and soft tissue
        ((0.45, 0.36, 0.15, 0.17, 0.3), 60.0),  # liver
        ((0.44, 0.64, 0.08, 0.1, -0.2), 30.0),  # stomach wall
        ((0.44, 0.64, 0.05, 0.07, -0.2), -850.0),  # gas in the stomach
        ((0.6, 0.33, 0.06, 0.04, 0.5), 180.0),  # right kidney, enhancing
        ((0.6, 0.67, 0.06, 0.04, -0.5), 180.0),  # left kidney
        ((0.56, 0.53, 0.03, 0.03, 0.0), 220.0),  # aorta with contrast
        ((0.72, 0.5, 0.07, 0.07, 0.0), 1100.0),  # vertebral body, cortex
        ((0.72, 0.5, 0.055, 0.055, 0.0), 350.0),  # cancellous bone
        ((0.8, 0.5, 0.025, 0.03, 0.0), 1000.0),  # spinous process
    ]
    for geometry, value in layers:
        hu[ellipse(size, size, *geometry)] = value
    body = hu > -900
    texture = ndimage.gaussian_filter(rng.normal(0.0, 1.0, hu.shape), 1.2)
    hu += np.where(body, 25.0 * texture / texture.std(), 0.0) + rng.normal(0.0, 6.0, hu.shape)
    hu = np.clip(hu, -1024, 3071)
    if dtype == np.uint16:
        return np.rint(hu + 1024).astype(np.uint16)
    return np.rint(hu).astype(dtype)


def ct_slice_8bit(
    size: int = 256, *, seed: int = 0, window: tuple[float, float] = (40.0, 400.0)
) -> np.ndarray:
    """The CT slice as an 8-bit PNG would hold it, in a (level, width) window."""
    level, width = window
    hu = ct_slice(size, seed=seed).astype(np.float64)
    scaled = np.clip((hu - (level - width / 2)) / width, 0.0, 1.0)
    return np.rint(scaled * 255).astype(np.uint8)


def mri_brain(size: int = 256, *, seed: int = 0, peak: int = 30000) -> np.ndarray:
    """An axial T1-like brain slice, uint16, brightest tissue near `peak` (rescaled 16-bit MR)."""
    rng = np.random.default_rng(seed)
    image = np.zeros((size, size))
    layers = [
        ((0.5, 0.5, 0.44, 0.36, 0.0), 0.85),  # scalp fat
        ((0.5, 0.5, 0.42, 0.34, 0.0), 0.08),  # skull
        ((0.5, 0.5, 0.39, 0.31, 0.0), 0.2),  # CSF
        ((0.5, 0.5, 0.37, 0.29, 0.0), 0.55),  # grey matter
        ((0.5, 0.5, 0.29, 0.22, 0.0), 0.75),  # white matter
        ((0.44, 0.45, 0.09, 0.03, 0.25), 0.18),  # left lateral ventricle
        ((0.44, 0.55, 0.09, 0.03, -0.25), 0.18),  # right lateral ventricle
        ((0.52, 0.39, 0.04, 0.03, 0.0), 0.6),  # deep grey nuclei
        ((0.52, 0.61, 0.04, 0.03, 0.0), 0.6),
        ((0.62, 0.58, 0.035, 0.04, 0.0), 0.95),  # an enhancing lesion
    ]
    for geometry, value in layers:
        image[ellipse(size, size, *geometry)] = value
    # gyri: the grey/white boundary is folded, not a clean ellipse
    folds = ndimage.gaussian_filter(rng.normal(0.0, 1.0, image.shape), size / 40)
    cortex = (image == 0.55) & (folds > 0.3 * folds.std())
    image[cortex] = 0.75
    head = image > 0
    image += np.where(head, 0.02 * rng.normal(0.0, 1.0, image.shape), 0.0)
    image = ndimage.gaussian_filter(image, 0.6)
    return np.rint(np.clip(image, 0.0, 1.0) * peak).astype(np.uint16)


def xray_chest(size: int = 256, *, seed: int = 0) -> np.ndarray:
    """A frontal chest radiograph, 8-bit grey: dark lungs, bright mediastinum, spine and ribs."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:size, 0:size] / size
    image = 0.25 + 0.55 * np.exp(-(((cols - 0.5) / 0.45) ** 2) * 2)  # soft tissue of the trunk
    for cx in (0.3, 0.7):
        image[ellipse(size, size, 0.48, cx, 0.3, 0.16, 0.0)] = 0.18
    image[ellipse(size, size, 0.55, 0.5, 0.28, 0.08, 0.0)] = 0.7  # mediastinum and heart
    image[ellipse(size, size, 0.62, 0.56, 0.14, 0.12, 0.0)] = 0.72
    image[np.abs(cols - 0.5) < 0.03] += 0.15  # spine
    for k in range(8):
        centre = 0.22 + 0.075 * k
        arc = np.abs(rows - centre - 0.25 * (cols - 0.5) ** 2) < 0.008
        image[arc & (np.abs(cols - 0.5) > 0.05) & (np.abs(cols - 0.5) < 0.42)] += 0.18
    image += ndimage.gaussian_filter(rng.normal(0.0, 0.04, image.shape), 2.0)
    image = ndimage.gaussian_filter(image, 1.0)
    return np.rint(np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)


def histopathology_tile(size: int = 256, *, seed: int = 0) -> np.ndarray:
    """An H&E-like RGB tile: pink stroma, white lumina and purple nuclei."""
    rng = np.random.default_rng(seed)
    fibres = ndimage.gaussian_filter(rng.normal(0.0, 1.0, (size, size)), (size / 90, size / 30))
    image = np.empty((size, size, 3))
    image[...] = np.array([0.93, 0.68, 0.8])
    image -= (fibres / fibres.std() * 0.05)[..., None] * np.array([0.3, 1.0, 0.6])
    for _ in range(3):
        cy, cx = rng.uniform(0.15, 0.85, 2)
        image[ellipse(size, size, cy, cx, *rng.uniform(0.05, 0.1, 2), rng.uniform(0, np.pi))] = 0.97
    nucleus_colour = np.array([0.35, 0.2, 0.55])
    radius = max(1.5, size * 0.012)
    for _ in range(int(size * size / (radius**2 * 30))):
        cy, cx = rng.uniform(0, 1, 2)
        mask = ellipse(
            size,
            size,
            cy,
            cx,
            radius / size * rng.uniform(0.9, 1.6),
            radius / size,
            rng.uniform(0, np.pi),
        )
        image[mask] = nucleus_colour * rng.uniform(0.8, 1.15)
    image += rng.normal(0.0, 0.015, image.shape)
    image = ndimage.gaussian_filter(image, (0.5, 0.5, 0))
    return np.rint(np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)


def dermoscopy_image(size: int = 256, *, seed: int = 0) -> np.ndarray:
    """A dermoscopic RGB image: skin, a brown irregular lesion with a darker network, a vignette."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:size, 0:size] / size
    image = np.empty((size, size, 3))
    image[...] = np.array([0.88, 0.68, 0.58])
    angle = np.arctan2(rows - 0.5, cols - 0.5)
    outline = (
        0.28
        + 0.04 * np.sin(3 * angle + rng.uniform(0, 6))
        + 0.03 * np.cos(5 * angle + rng.uniform(0, 6))
    )
    distance = np.hypot(rows - 0.5, cols - 0.5)
    lesion = np.clip((outline - distance) / 0.03, 0.0, 1.0)
    network = ndimage.gaussian_filter(rng.normal(0.0, 1.0, (size, size)), size / 80)
    pigment = np.array([0.45, 0.28, 0.18]) - (0.12 * (network > 0))[..., None]
    image = image * (1 - lesion[..., None]) + pigment * lesion[..., None]
    image *= (1.0 - 0.5 * np.clip(distance - 0.35, 0.0, 1.0))[..., None]  # lens vignette
    image += rng.normal(0.0, 0.01, image.shape)
    return np.rint(np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)


def ellipse(
    height: int, width: int, cy: float, cx: float, ry: float, rx: float, angle: float = 0.0
) -> np.ndarray:
    """Boolean mask of an ellipse; centre and radii are fractions of the height and width."""
    rows, cols = np.mgrid[0:height, 0:width]
    dy, dx = rows / height - cy, cols / width - cx
    along = dx * np.cos(angle) + dy * np.sin(angle)
    across = -dx * np.sin(angle) + dy * np.cos(angle)
    return (along / rx) ** 2 + (across / ry) ** 2 <= 1.0
