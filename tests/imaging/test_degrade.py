from __future__ import annotations

import json

import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio

from annotations.imaging import phantoms
from annotations.imaging.degrade import (
    KINDS,
    SEVERITIES,
    DegradationError,
    apply,
    kinds_for_modality,
)

SIZE = 96
CT_KINDS = {"limited_angle", "sparse_view", "low_dose"}
MRI_KINDS = {"bias_field_artifact", "undersampling_artifact", "ghosting_artifact"}
HISTO_KINDS = {"blood_cell_artifact", "dark_spots_artifact", "bubble_artifact"}


def modality_for(kind: str) -> str:
    if kind in CT_KINDS:
        return "CT"
    if kind in MRI_KINDS:
        return "MRI"
    if kind in HISTO_KINDS:
        return "Histopathology"
    return "X-ray"


def suitable_images(kind: str) -> list[tuple[str, np.ndarray]]:
    """The project's test images on which `kind` makes sense, with their modality."""
    ct = ("CT", phantoms.ct_slice(SIZE, seed=1))
    mri = ("MRI", phantoms.mri_brain(SIZE, seed=1))
    histo = ("Histopathology", phantoms.histopathology_tile(SIZE, seed=1))
    if kind in CT_KINDS:
        return [ct]
    if kind in MRI_KINDS:
        return [mri]
    if kind in HISTO_KINDS:
        return [histo]
    derm = ("Dermoscopy", phantoms.dermoscopy_image(SIZE, seed=1))
    xray = ("X-ray", phantoms.xray_chest(SIZE, seed=1))
    return [ct, mri, histo, derm, xray]


def dtype_range(image: np.ndarray) -> float:
    if image.dtype in (np.uint8, np.uint16):
        return float(np.iinfo(image.dtype).max)
    return float(image.max() - image.min())


def psnr(clean: np.ndarray, other: np.ndarray) -> float:
    return peak_signal_noise_ratio(clean, other, data_range=dtype_range(clean))


SHAPED_IMAGES = {
    "uint8 grey": lambda: phantoms.xray_chest(64),
    "uint16 grey": lambda: phantoms.mri_brain(64),
    "int16 grey": lambda: phantoms.ct_slice(64),
    "float grey": lambda: phantoms.ct_slice(64).astype(np.float32) / 1000.0,
    "rgb": lambda: phantoms.histopathology_tile(64),
    "odd size": lambda: phantoms.dermoscopy_image(64)[:37, :53],
    "odd grey": lambda: phantoms.ct_slice(64, dtype=np.uint16)[5:58, 3:40],
    "tiny": lambda: phantoms.xray_chest(8),
    "tiny rgb": lambda: phantoms.histopathology_tile(8),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("image_name", SHAPED_IMAGES)
def test_it_keeps_shape_and_dtype(kind: str, image_name: str) -> None:
    image = SHAPED_IMAGES[image_name]()
    out, _ = apply(image, kind, "severe", seed=3, modality=modality_for(kind))
    assert out.shape == image.shape
    assert out.dtype == image.dtype


@pytest.mark.parametrize("kind", KINDS)
def test_it_clips_signed_and_float_images_to_the_input_range(kind: str) -> None:
    image = phantoms.ct_slice(48).astype(np.float32)
    out, _ = apply(image, kind, "severe", seed=0, modality=modality_for(kind))
    assert out.min() >= image.min()
    assert out.max() <= image.max()


@pytest.mark.parametrize("kind", KINDS)
def test_it_is_bit_identical_for_the_same_seed_and_differs_for_another(kind: str) -> None:
    modality, image = suitable_images(kind)[0]
    first, first_params = apply(image, kind, "mild", seed=11, modality=modality)
    again, again_params = apply(image, kind, "mild", seed=11, modality=modality)
    other, _ = apply(image, kind, "mild", seed=12, modality=modality)
    assert np.array_equal(first, again)
    assert first_params == again_params
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("kind", KINDS)
def test_severe_degrades_more_than_mild_which_still_changes_the_image(kind: str, seed: int) -> None:
    for modality, clean in suitable_images(kind):
        mild, _ = apply(clean, kind, "mild", seed=seed, modality=modality)
        severe, _ = apply(clean, kind, "severe", seed=seed, modality=modality)
        mild_psnr, severe_psnr = psnr(clean, mild), psnr(clean, severe)
        assert mild_psnr < 45.0, (modality, mild_psnr)
        assert mild_psnr > severe_psnr, (modality, mild_psnr, severe_psnr)


@pytest.mark.parametrize("severity", SEVERITIES)
@pytest.mark.parametrize("kind", KINDS)
def test_its_parameters_survive_a_json_round_trip_and_name_the_seed(
    kind: str, severity: str
) -> None:
    modality, image = suitable_images(kind)[0]
    _, params = apply(image, kind, severity, seed=42, modality=modality)
    assert json.loads(json.dumps(params)) == params
    assert params["kind"] == kind
    assert params["severity"] == severity
    assert params["seed"] == 42
    assert len(params) > 5  # the draws themselves, not only the request


@pytest.mark.parametrize(
    ("kind", "modality"),
    [
        ("low_dose", "Dermoscopy"),
        ("sparse_view", "MRI"),
        ("ghosting_artifact", "CT"),
        ("bubble_artifact", "X-ray"),
    ],
)
def test_it_refuses_a_kind_that_does_not_fit_the_modality(kind: str, modality: str) -> None:
    with pytest.raises(DegradationError, match=f"{kind}.*{modality}"):
        apply(phantoms.xray_chest(16), kind, "mild", seed=0, modality=modality)


@pytest.mark.parametrize(
    ("kind", "severity", "modality", "message"),
    [
        ("sharpen", "mild", "CT", "unknown degradation kind"),
        ("gaussian_blur", "extreme", "CT", "unknown severity"),
        ("gaussian_blur", "mild", "PET", "unknown modality"),
    ],
)
def test_it_refuses_unknown_requests(kind: str, severity: str, modality: str, message: str) -> None:
    with pytest.raises(DegradationError, match=message):
        apply(phantoms.xray_chest(16), kind, severity, seed=0, modality=modality)


@pytest.mark.parametrize(
    "image", [np.zeros((4, 4, 4), np.uint8), np.zeros((0, 5), np.uint8), np.zeros((4, 4), bool)]
)
def test_it_refuses_images_it_cannot_degrade(image: np.ndarray) -> None:
    with pytest.raises(DegradationError):
        apply(image, "gaussian_blur", "mild", seed=0, modality="CT")


def test_it_lists_the_kinds_each_modality_allows() -> None:
    assert len(KINDS) == len(set(KINDS)) == 18
    assert set(kinds_for_modality("ct")) == CT_KINDS | (
        set(KINDS) - CT_KINDS - MRI_KINDS - HISTO_KINDS
    )
    assert set(kinds_for_modality("MR")) >= MRI_KINDS
    assert set(kinds_for_modality("Pathology")) >= HISTO_KINDS
    assert len(kinds_for_modality("Dermoscopy")) == 9
    assert not set(kinds_for_modality("Ultrasound")) & (CT_KINDS | MRI_KINDS | HISTO_KINDS)


def test_it_degrades_a_grey_constant_image_without_dividing_by_zero() -> None:
    image = np.full((32, 32), 500, np.uint16)
    out, _ = apply(image, "low_dose", "severe", seed=0, modality="CT")
    assert out.dtype == np.uint16
    assert np.isfinite(out.astype(float)).all()


def test_it_draws_histopathology_artifacts_in_intensity_on_grey_slides() -> None:
    grey = phantoms.histopathology_tile(64).mean(axis=2).astype(np.uint8)
    out, _ = apply(grey, "dark_spots_artifact", "severe", seed=0, modality="Histopathology")
    assert out.mean() < grey.mean() - 5


def test_it_runs_the_ct_physics_on_the_luminance_of_an_rgb_copy() -> None:
    rgb = np.repeat(phantoms.ct_slice_8bit(64)[..., None], 3, axis=2)
    out, _ = apply(rgb, "sparse_view", "severe", seed=0, modality="CT")
    assert np.array_equal(out[..., 0], out[..., 1])
    assert not np.array_equal(out, rgb)


@pytest.mark.parametrize("kind", ["low_dose", "motion_blur", "undersampling_artifact"])
def test_it_degrades_a_2048_pixel_image(kind: str) -> None:
    image = np.kron(phantoms.mri_brain(256), np.ones((8, 8), np.uint16))
    modality = "CT" if kind == "low_dose" else "MRI"
    out, _ = apply(image, kind, "severe", seed=0, modality=modality)
    assert out.shape == (2048, 2048)
    assert out.dtype == np.uint16
    assert psnr(image, out) < 45.0
