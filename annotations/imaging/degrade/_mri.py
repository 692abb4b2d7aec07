"""MRI degradations: k-space undersampling, Nyquist ghosting and a smooth bias field.

k-space is the centred 2D Fourier transform of the slice; one row of it along the
phase-encode axis is one acquired line. The magnitude of the inverse transform is what an
MR scanner displays, so both k-space kinds return magnitudes.
"""

from __future__ import annotations

import numpy as np

from ._common import Params, draw, on_luminance

# (acceleration factor R, fraction of central lines always kept)
UNDERSAMPLING = {"mild": ((2.0, 2.5), 0.12), "severe": ((4.0, 5.0), 0.05)}
# phase error (radians) on every second line; the ghost has sin(phi / 2) of the signal
GHOST_PHASE = {"mild": (0.4, 0.55), "severe": (1.2, 1.5)}
# the field's log spans +/- this value: 0.25 is about +/- 28 % intensity
BIAS_STRENGTH = {"mild": (0.22, 0.28), "severe": (0.6, 0.75)}
BIAS_DEGREE = 3


def undersampling_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Keep the centre of k-space and a random subset of the other lines; zero-fill the rest."""
    (r_low, r_high), centre_fraction = UNDERSAMPLING[severity]
    acceleration = draw(rng, r_low, r_high, digits=3)
    axis = int(rng.integers(0, 2))
    n_lines = x.shape[axis]
    kept = _pick_lines(n_lines, acceleration, centre_fraction, rng)
    mask = np.zeros(n_lines, dtype=bool)
    mask[kept] = True

    def zero_fill(gray: np.ndarray) -> np.ndarray:
        kspace = _to_kspace(gray)
        kspace *= mask[:, None] if axis == 0 else mask[None, :]
        return _to_image(kspace)

    params: Params = {
        "acceleration": acceleration,
        "phase_encode_axis": axis,
        "centre_fraction": centre_fraction,
        "kept_lines": [int(i) for i in kept],
    }
    return on_luminance(x, zero_fill), params


def ghosting_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Phase error alternating line by line: a ghost of the anatomy shifted by half the field."""
    phase = draw(rng, *GHOST_PHASE[severity])
    axis = int(rng.integers(0, 2))

    def alternate_phase(gray: np.ndarray) -> np.ndarray:
        kspace = _to_kspace(gray)
        odd = (slice(1, None, 2), slice(None)) if axis == 0 else (slice(None), slice(1, None, 2))
        kspace[odd] *= np.exp(1j * phase)
        return _to_image(kspace)

    return on_luminance(x, alternate_phase), {
        "phase_error_radians": phase,
        "phase_encode_axis": axis,
    }


def bias_field_artifact(
    x: np.ndarray, severity: str, rng: np.random.Generator
) -> tuple[np.ndarray, Params]:
    """Receive-coil inhomogeneity: a smooth multiplicative field from a random cubic polynomial."""
    strength = draw(rng, *BIAS_STRENGTH[severity])
    terms = [
        (i, j) for i in range(BIAS_DEGREE + 1) for j in range(BIAS_DEGREE + 1 - i) if i + j > 0
    ]
    coefficients = [round(float(c), 4) for c in rng.normal(0.0, 1.0, size=len(terms))]
    v, u = np.meshgrid(
        np.linspace(-1, 1, x.shape[0]), np.linspace(-1, 1, x.shape[1]), indexing="ij"
    )
    log_field = sum(
        (c * u**i * v**j for c, (i, j) in zip(coefficients, terms, strict=True)), np.zeros_like(u)
    )
    # scaled on the central disc, where the anatomy is, so the corners do not set the contrast
    central = u**2 + v**2 <= 0.6
    log_field = log_field - log_field[central].mean()
    peak = float(np.abs(log_field[central]).max()) if central.any() else 0.0
    log_field = np.clip(log_field / peak, -1.5, 1.5) if peak > 0 else np.zeros_like(log_field)
    field = np.exp(strength * log_field)
    out = x * (field[..., None] if x.ndim == 3 else field)
    params: Params = {
        "strength": strength,
        "terms": [list(t) for t in terms],
        "coefficients": coefficients,
    }
    return out, params


def _pick_lines(
    n_lines: int, acceleration: float, centre_fraction: float, rng: np.random.Generator
) -> np.ndarray:
    n_keep = max(1, round(n_lines / acceleration))
    n_centre = min(n_keep, max(1, round(n_lines * centre_fraction)))
    first = n_lines // 2 - n_centre // 2
    centre = np.arange(first, first + n_centre)
    others = np.setdiff1d(np.arange(n_lines), centre)
    extra = rng.choice(others, size=min(others.size, n_keep - n_centre), replace=False)
    return np.sort(np.concatenate([centre, extra]).astype(int))


def _to_kspace(gray: np.ndarray) -> np.ndarray:
    return np.fft.fftshift(np.fft.fft2(gray))


def _to_image(kspace: np.ndarray) -> np.ndarray:
    return np.abs(np.fft.ifft2(np.fft.ifftshift(kspace)))
