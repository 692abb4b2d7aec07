"""Degradations that apply to any modality: geometry, photometry, noise, resolution, blur.

Every function takes the image as float64 in [0, 1] (2D or H x W x 3), a severity and a
generator, and returns the degraded float image with the parameters it drew. Ranges are
relative to the image size or intensity range so that a 128 px tile and a 2048 px slide
degrade alike.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage, signal
from skimage.transform import resize

from ._common import Params, draw, draw_sign, short_side, spatial_sigma

ROTATION_DEGREES = {"mild": (4.0, 7.0), "severe": (12.0, 20.0)}
# (number of ghost copies, shift as a fraction of the short side, weight of the ghosts)
MOTION_GHOSTS = {"mild": (2, (0.02, 0.03), 0.3), "severe": (4, (0.05, 0.08), 0.55)}
BRIGHTNESS_SHIFT = {"mild": (0.08, 0.12), "severe": (0.25, 0.35)}
# gamma < 1 over-exposes, gamma > 1 under-exposes
EXPOSURE_GAMMA = {
    "mild": {"over": (0.65, 0.75), "under": (1.4, 1.6)},
    "severe": {"over": (0.3, 0.4), "under": (2.5, 3.2)},
}
CONTRAST_FACTOR = {"mild": (0.55, 0.65), "severe": (0.2, 0.3)}
NOISE_SIGMA = {"mild": (0.03, 0.045), "severe": (0.1, 0.14)}
DOWNSAMPLE_FACTOR = {"mild": (2.0, 3.0), "severe": (5.0, 7.0)}
# (fraction of the short side, pixels added so that tiny images still blur visibly)
MOTION_BLUR_LENGTH = {"mild": ((0.015, 0.025), 3.0), "severe": ((0.05, 0.07), 6.0)}
BLUR_SIGMA = {"mild": ((0.004, 0.006), 0.6), "severe": ((0.014, 0.02), 2.0)}


def rotation_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Rotate about the centre; corners that leave the field of view are filled with black/air."""
    angle = draw_sign(rng) * draw(rng, *ROTATION_DEGREES[severity])
    out = ndimage.rotate(x, angle, axes=(1, 0), reshape=False, order=1, mode="constant", cval=0.0)
    return out, {"angle_degrees": angle, "fill": 0.0}


def random_motion_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Patient motion during acquisition: faint copies of the image shifted in random directions."""
    n_copies, shift_range, weight = MOTION_GHOSTS[severity]
    side = short_side(x)
    shifts = []
    ghosts = np.zeros_like(x)
    for _ in range(n_copies):
        length = draw(rng, *shift_range) * side
        direction = rng.uniform(0.0, 2.0 * np.pi)
        dy, dx = round(length * np.sin(direction), 3), round(length * np.cos(direction), 3)
        shifts.append([dy, dx])
        offset = (dy, dx, 0.0) if x.ndim == 3 else (dy, dx)
        ghosts += ndimage.shift(x, offset, order=1, mode="nearest")
    out = (1.0 - weight) * x + weight * ghosts / n_copies
    return out, {"shifts_px": shifts, "ghost_weight": weight}


def adjust_brightness(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Additive shift of every intensity, as a fraction of the intensity range."""
    shift = draw_sign(rng) * draw(rng, *BRIGHTNESS_SHIFT[severity])
    return x + shift, {"shift": shift}


def exposure_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Over- or under-exposure as a gamma curve on the normalised intensity."""
    direction = "over" if rng.random() < 0.5 else "under"
    gamma = draw(rng, *EXPOSURE_GAMMA[severity][direction])
    return np.clip(x, 0.0, 1.0) ** gamma, {"direction": direction, "gamma": gamma}


def reduce_contrast(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Compress intensities towards the image mean."""
    factor = draw(rng, *CONTRAST_FACTOR[severity])
    mean = float(x.mean())
    return mean + (x - mean) * factor, {"factor": factor, "mean": round(mean, 6)}


def gaussian_noise(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Additive white Gaussian noise; sigma is a fraction of the intensity range."""
    sigma = draw(rng, *NOISE_SIGMA[severity])
    return x + rng.normal(0.0, sigma, size=x.shape), {"sigma": sigma}


def downsample_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Acquire at low resolution, display at the original size: averaged then blocky pixels."""
    factor = draw(rng, *DOWNSAMPLE_FACTOR[severity])
    small_shape = tuple(max(1, round(n / factor)) for n in x.shape[:2]) + x.shape[2:]
    small = resize(x, small_shape, order=1, anti_aliasing=True, mode="reflect")
    out = resize(small, x.shape, order=0, anti_aliasing=False, mode="edge")
    return out, {"factor": factor, "low_resolution_shape": list(small_shape[:2])}


def motion_blur(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Camera or patient movement during exposure: convolution with a straight line at an angle."""
    fraction_range, base_px = MOTION_BLUR_LENGTH[severity]
    length = round(base_px + draw(rng, *fraction_range) * short_side(x), 3)
    angle = draw(rng, 0.0, 180.0)
    kernel = line_kernel(length, angle)
    return convolve_reflect(x, kernel), {"length_px": length, "angle_degrees": angle}


def gaussian_blur(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Out-of-focus blur; sigma is a fraction of the short side."""
    fraction_range, base_px = BLUR_SIGMA[severity]
    sigma = round(base_px + draw(rng, *fraction_range) * short_side(x), 4)
    out = ndimage.gaussian_filter(x, spatial_sigma(x, sigma), mode="reflect")
    return out, {"sigma_px": sigma}


def line_kernel(length: float, angle_degrees: float) -> np.ndarray:
    """Normalised, anti-aliased line of `length` pixels through the kernel centre."""
    radius = int(np.ceil(length / 2.0)) + 1
    kernel = np.zeros((2 * radius + 1, 2 * radius + 1))
    theta = np.deg2rad(angle_degrees)
    steps = np.linspace(-length / 2.0, length / 2.0, max(2, int(np.ceil(length * 4))))
    ys, xs = radius - steps * np.sin(theta), radius + steps * np.cos(theta)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    fy, fx = ys - y0, xs - x0
    # bilinear splatting keeps the line's energy where a sub-pixel position puts it
    for dy, dx, wgt in (
        (0, 0, (1 - fy) * (1 - fx)),
        (0, 1, (1 - fy) * fx),
        (1, 0, fy * (1 - fx)),
        (1, 1, fy * fx),
    ):
        np.add.at(kernel, (y0 + dy, x0 + dx), wgt)
    return kernel / kernel.sum()


def convolve_reflect(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Convolution with mirrored borders, through the FFT.

    Same result as `scipy.ndimage.convolve(mode="reflect")`, but a long motion kernel on a
    2048 px image would take minutes as a direct convolution.
    """
    pad = kernel.shape[0] // 2
    widths = ((pad, pad), (pad, pad)) + (((0, 0),) if x.ndim == 3 else ())
    padded = np.pad(x, widths, mode="symmetric")
    full_kernel = kernel[..., None] if x.ndim == 3 else kernel
    return signal.fftconvolve(padded, full_kernel, mode="valid", axes=(0, 1))
