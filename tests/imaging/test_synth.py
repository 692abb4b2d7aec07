from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from annotations.imaging.synth import (
    SCENES,
    draw_visual_prompt,
    encode_jpeg,
    endoscopy_frame,
    endoscopy_scene,
    ultrasound_image,
)

SIZE = (160, 192)


def frame(seed: int = 0, scene: str = "colonoscopy", finding: str | None = "polyp") -> np.ndarray:
    return endoscopy_frame(np.random.default_rng(seed), SIZE, scene=scene, finding=finding)


def test_it_returns_an_rgb_uint8_frame_of_the_requested_size():
    pixels = frame()
    assert pixels.shape == (*SIZE, 3)
    assert pixels.dtype == np.uint8


def test_it_is_deterministic_for_a_seed():
    assert np.array_equal(frame(seed=3), frame(seed=3))
    assert not np.array_equal(frame(seed=3), frame(seed=4))


@pytest.mark.parametrize("scene", SCENES)
def test_it_darkens_the_corners_outside_the_field_of_view(scene):
    pixels = frame(scene=scene, finding=None).astype(float)
    corner = pixels[:6, :6].mean()
    centre = pixels[
        SIZE[0] // 2 - 10 : SIZE[0] // 2 + 10, SIZE[1] // 2 - 10 : SIZE[1] // 2 + 10
    ].mean()
    assert corner < 15
    assert centre > 3 * corner + 20


def test_scenes_differ_in_colour():
    means = {
        scene: frame(seed=1, scene=scene, finding=None).reshape(-1, 3).mean(axis=0)
        for scene in SCENES
    }
    # Capsule frames are yellow-green: relatively more green than gastroscopy's red mucosa.
    ratio = {scene: mean[1] / mean[0] for scene, mean in means.items()}
    assert ratio["capsule endoscopy"] > ratio["gastroscopy"] + 0.15
    for a in SCENES:
        for b in SCENES:
            if a < b:
                assert np.abs(means[a] - means[b]).max() > 5, (a, b)


def test_a_drawn_finding_changes_its_region_and_is_reported_in_the_frame_box():
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    bleeding = endoscopy_scene(rng_a, SIZE, scene="gastroscopy", finding="bleeding")
    x0, y0, x1, y1 = bleeding.finding_bbox
    assert 0 <= x0 < x1 <= SIZE[1] and 0 <= y0 < y1 <= SIZE[0]
    inside = bleeding.pixels[y0:y1, x0:x1].astype(float)
    # Pooled blood: red dominates green far more than on ordinary mucosa.
    assert (inside[..., 0] - inside[..., 1]).mean() > 60
    normal = endoscopy_scene(rng_b, SIZE, scene="gastroscopy", finding="normal")
    assert normal.finding_bbox is None


def test_surgery_frames_report_how_many_instruments_they_draw():
    counts = {
        endoscopy_scene(
            np.random.default_rng(seed), SIZE, scene="surgery", finding=None
        ).instrument_count
        for seed in range(12)
    }
    assert counts <= {1, 2, 3}
    assert len(counts) > 1


def test_it_rejects_an_unknown_scene():
    with pytest.raises(ValueError, match="unknown scene"):
        frame(scene="bronchoscopy")


def test_a_box_prompt_changes_the_pixels_along_its_outline_only():
    pixels = frame()
    box = [40, 30, 120, 110]
    drawn = draw_visual_prompt(pixels, "box", box, (0, 255, 0))
    assert drawn.shape == pixels.shape
    top_edge = drawn[box[1], box[0] : box[2]]
    assert (top_edge == [0, 255, 0]).all()
    assert np.array_equal(drawn[70, 80], pixels[70, 80])  # the box's interior is untouched
    assert np.array_equal(drawn[5:20, 5:20], pixels[5:20, 5:20])
    assert not np.array_equal(
        pixels[box[1], box[0] : box[2]], top_edge
    )  # input not modified in place


@pytest.mark.parametrize("kind", ["circle", "arrow", "point"])
def test_other_prompts_draw_in_the_requested_colour(kind):
    pixels = frame()
    drawn = draw_visual_prompt(pixels, kind, [60, 50, 100, 90], (255, 255, 0))
    changed = np.any(drawn != pixels, axis=-1)
    assert changed.sum() > 20
    assert (drawn[changed] == [255, 255, 0]).all(axis=-1).mean() > 0.5


def test_jpeg_encoding_decodes_to_the_same_size():
    data = encode_jpeg(frame(), quality=90)
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "JPEG"
        assert image.size == (SIZE[1], SIZE[0])


@pytest.mark.parametrize(("lesion", "brighter_behind"), [("cyst", True), ("solid", False)])
def test_ultrasound_lesion_is_dark_with_enhancement_or_shadow_behind_it(lesion, brighter_behind):
    pixels, (x0, y0, x1, y1) = ultrasound_image(np.random.default_rng(2), (192, 224), lesion=lesion)
    assert pixels.dtype == np.uint8 and pixels.shape == (192, 224)
    width = x1 - x0
    inside = pixels[y0:y1, x0:x1].mean()
    beside = pixels[y0:y1, max(0, x0 - width) : x0].mean()
    assert inside < beside
    below = pixels[y1 + 4 : y1 + 24, x0 + width // 4 : x1 - width // 4].mean()
    below_beside = pixels[y1 + 4 : y1 + 24, max(0, x0 - width) : x0].mean()
    assert bool(below > below_beside) is brighter_behind
    assert pixels[0, 0] == 0  # outside the sector
