from __future__ import annotations

import numpy as np
import pytest

from annotations.imaging.synthct import (
    PHASES,
    make_abdomen_phantom,
    phantom_boxes,
    write_synthetic_series,
)

SHAPE = (24, 96, 96)


@pytest.fixture(scope="module")
def phases() -> dict[str, np.ndarray]:
    return {phase: make_abdomen_phantom(SHAPE, phase=phase, seed=7) for phase in PHASES}


def _mean_in(volume: np.ndarray, voxel: list[int]) -> float:
    x0, y0, z0, x1, y1, z1 = voxel
    return float(volume[z0:z1, y0:y1, x0:x1].mean())


def _centre_value(volume: np.ndarray, voxel: list[int]) -> int:
    x0, y0, z0, x1, y1, z1 = voxel
    return int(volume[(z0 + z1) // 2, (y0 + y1) // 2, (x0 + x1) // 2])


def test_the_phantom_is_int16_hu_with_air_fat_and_bone(phases):
    volume = phases["non_contrast"]
    assert volume.dtype == np.int16 and volume.shape == SHAPE
    assert volume.min() <= -950
    assert volume.max() >= 900  # cortical bone of the spine
    assert ((volume > -130) & (volume < -70)).mean() > 0.05  # a real fat compartment


def test_the_aorta_is_brightest_in_the_arterial_phase(phases):
    # The aorta runs through every slice at the same place, in front of the spine.
    aorta = {
        phase: float(v[:, int(96 * 0.58), int(96 * 0.53)].mean()) for phase, v in phases.items()
    }
    assert aorta["arterial"] > 250
    assert aorta["non_contrast"] < 80
    assert aorta["arterial"] > aorta["venous"] > aorta["delayed"] > aorta["non_contrast"]


def test_the_four_phases_look_different_but_share_anatomy(phases):
    for a in PHASES:
        for b in PHASES:
            if a < b:
                assert np.abs(phases[a].astype(int) - phases[b].astype(int)).mean() > 2
    air = [v < -900 for v in phases.values()]
    assert all(np.array_equal(air[0], other) for other in air[1:])


def test_boxes_frame_the_structures_they_name(phases):
    boxes = phantom_boxes(SHAPE, seed=7)
    labels = [box["label"] for box in boxes]
    assert labels == ["stomach", "tumor", "lymph_node", "lymph_node", "lymph_node"]
    venous = phases["venous"]
    for box in boxes:
        x0, y0, z0, x1, y1, z1 = box["voxel"]
        assert 0 <= x0 < x1 <= SHAPE[2] and 0 <= y0 < y1 <= SHAPE[1] and 0 <= z0 < z1 <= SHAPE[0]
    tumor = boxes[1]["voxel"]
    assert 80 < _centre_value(venous, tumor) < 150  # enhancing tumor, not air or fat
    stomach = boxes[0]["voxel"]
    assert _mean_in(venous, stomach) < -300  # mostly the air-filled lumen
    for node in boxes[2:]:
        assert 50 < _centre_value(venous, node["voxel"]) < 130


def test_the_seed_moves_the_anatomy_and_is_reproducible():
    assert phantom_boxes(SHAPE, seed=7) == phantom_boxes(SHAPE, seed=7)
    assert phantom_boxes(SHAPE, seed=7) != phantom_boxes(SHAPE, seed=8)
    first = make_abdomen_phantom((8, 48, 48), phase="venous", seed=1)
    assert np.array_equal(first, make_abdomen_phantom((8, 48, 48), phase="venous", seed=1))


def test_it_refuses_an_unknown_phase():
    with pytest.raises(ValueError, match="unknown phase"):
        make_abdomen_phantom((4, 16, 16), phase="portal", seed=1)


def test_the_writer_refuses_a_direction_that_is_not_a_rotation(tmp_path):
    mirrored = (1, 0, 0, 0, 1, 0, 0, 0, -1)
    with pytest.raises(ValueError, match="proper rotation"):
        write_synthetic_series(
            tmp_path,
            np.zeros((2, 4, 4), np.int16),
            spacing=(1, 1, 1),
            origin=(0, 0, 0),
            direction=mirrored,
            phase="venous",
        )
