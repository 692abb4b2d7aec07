"""The degradation registry, modality rules and the dtype-preserving `apply`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from annotations.imaging.modalities import ANY_MODALITY_KINDS as _ANY_MODALITY
from annotations.imaging.modalities import CT_KINDS as _CT_ONLY
from annotations.imaging.modalities import HISTOPATHOLOGY_KINDS as _HISTO_ONLY
from annotations.imaging.modalities import MODALITIES
from annotations.imaging.modalities import MRI_KINDS as _MRI_ONLY

from ._common import DegradationError, Params

Degrader = Callable[[np.ndarray, str, np.random.Generator], tuple[np.ndarray, Params]]

SEVERITIES = ("mild", "severe")

KINDS: tuple[str, ...] = _CT_ONLY + _MRI_ONLY + _HISTO_ONLY + _ANY_MODALITY
_ONLY_FOR = {"ct": _CT_ONLY, "mri": _MRI_ONLY, "histopathology": _HISTO_ONLY}
# spellings that published benchmark files use for the same modalities
_ALIASES = {"mr": "mri", "pathology": "histopathology", "xray": "x-ray"}


def _degrader(kind: str) -> Degrader:
    # The degraders bring scipy and scikit-image (about a second to load): they are loaded by the
    # first degradation, not by every process that only lists the kinds (forms, the URL conf).
    from . import _ct, _generic, _histo, _mri

    for module, kinds in (
        (_ct, _CT_ONLY),
        (_mri, _MRI_ONLY),
        (_histo, _HISTO_ONLY),
        (_generic, _ANY_MODALITY),
    ):
        if kind in kinds:
            return getattr(module, kind)
    raise DegradationError(f"unknown degradation kind {kind!r}")


def kinds_for_modality(modality: str) -> list[str]:
    """The degradation kinds that make physical sense for `modality` (case-insensitive)."""
    key = _modality_key(modality)
    return list(_ONLY_FOR.get(key, ()) + _ANY_MODALITY)


def apply(
    image: np.ndarray, kind: str, severity: str, *, seed: int, modality: str
) -> tuple[np.ndarray, dict]:
    """Degrade `image` reproducibly; return an array of the same shape and dtype and the parameters.

    `image` is 2D grey (uint8, uint16, int16 or float) or H x W x 3 RGB. Intensities are
    degraded relative to the image's own range (uint8: 0-255), then clipped to the dtype's
    range (uint8, uint16) or to the input's min/max (signed integers, floats). The returned
    dict is JSON-serialisable and holds kind, severity, seed, modality and every draw that
    shapes the result; the same arguments give a bit-identical array.
    """
    if kind not in KINDS:
        raise DegradationError(
            f"unknown degradation kind {kind!r}; expected one of {', '.join(KINDS)}"
        )
    if severity not in SEVERITIES:
        raise DegradationError(f"unknown severity {severity!r}; expected 'mild' or 'severe'")
    if kind not in kinds_for_modality(modality):
        raise DegradationError(f"degradation {kind!r} does not apply to modality {modality!r}")
    _check_image(image)
    low, high = _intensity_frame(image)
    x = (image.astype(np.float64) - low) / (high - low)
    degraded, drawn = _degrader(kind)(x, severity, np.random.default_rng(seed))
    out = _to_dtype(degraded * (high - low) + low, image)
    params: dict = {"kind": kind, "severity": severity, "seed": int(seed), "modality": modality}
    params["intensity_frame"] = [float(low), float(high)]
    params.update(drawn)
    return out, params


def _modality_key(modality: str) -> str:
    key = str(modality).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in {m.lower() for m in MODALITIES}:
        raise DegradationError(
            f"unknown modality {modality!r}; expected one of {', '.join(MODALITIES)}"
        )
    return key


def _check_image(image: np.ndarray) -> None:
    if not isinstance(image, np.ndarray) or image.size == 0:
        raise DegradationError("image must be a non-empty numpy array")
    grey = image.ndim == 2
    rgb = image.ndim == 3 and image.shape[2] == 3
    if not (grey or rgb):
        raise DegradationError(f"image must be 2D grey or H x W x 3 RGB, got shape {image.shape}")
    if image.dtype == np.bool_ or not (
        np.issubdtype(image.dtype, np.integer) or np.issubdtype(image.dtype, np.floating)
    ):
        raise DegradationError(f"unsupported image dtype {image.dtype}")
    if np.issubdtype(image.dtype, np.floating) and not np.isfinite(image).all():
        raise DegradationError("image contains NaN or infinite values")


def _intensity_frame(image: np.ndarray) -> tuple[float, float]:
    """The intensities that map to 0 and 1 while degrading."""
    # 8-bit photographs are absolute (black is 0, white 255); other data is relative to itself
    if image.dtype == np.uint8:
        return 0.0, 255.0
    low, high = float(image.min()), float(image.max())
    return low, (high if high > low else low + 1.0)


def _to_dtype(values: np.ndarray, image: np.ndarray) -> np.ndarray:
    if image.dtype in (np.uint8, np.uint16):
        info = np.iinfo(image.dtype)
        low, high = float(info.min), float(info.max)
    else:
        low, high = float(image.min()), float(image.max())
    clipped = np.clip(values, low, high)
    if np.issubdtype(image.dtype, np.integer):
        clipped = np.rint(clipped)
    return clipped.astype(image.dtype)
