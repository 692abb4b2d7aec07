from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from annotations.imaging.volume import VoxelCacheError, open_voxel_cache, write_voxel_cache
from annotations.imaging.window import (
    WINDOW_PRESETS,
    apply_window,
    encode_png,
    render_slice_png,
)


def test_presets_are_width_level_pairs_in_keyboard_order():
    assert list(WINDOW_PRESETS.items()) == [
        ("soft_tissue", (400, 40)),
        ("liver", (150, 90)),
        ("lung", (1500, -600)),
        ("bone", (2500, 480)),
        ("brain", (80, 40)),
    ]


def test_soft_tissue_window_maps_its_edges_to_black_and_white():
    hu = np.array([-32768, -1000, -161, -160, 40, 239, 240, 3000, 32767], dtype=np.int16)
    grey = apply_window(hu, 400, 40)
    assert grey.dtype == np.uint8
    assert grey.tolist() == [0, 0, 0, 0, 128, 255, 255, 255, 255]


def test_the_lookup_table_matches_the_dicom_linear_formula_everywhere():
    hu = np.arange(-32768, 32768, dtype=np.int64).astype(np.int16)
    width, level = 150, 90
    expected = ((hu.astype(np.float64) - (level - 0.5)) / (width - 1) + 0.5) * 255
    expected = np.clip(np.rint(expected), 0, 255).astype(np.uint8)
    assert np.array_equal(apply_window(hu, width, level), expected)


def test_it_windows_float_input_by_rounding_to_hu():
    assert apply_window(np.array([[39.6, -2000.0]]), 400, 40).tolist() == [[128, 0]]


def test_it_rejects_a_window_narrower_than_one_hu():
    with pytest.raises(ValueError, match="width"):
        apply_window(np.zeros(3, np.int16), 0, 40)


def test_png_decodes_to_exactly_the_windowed_pixels():
    grey = np.random.default_rng(3).integers(0, 256, (37, 53), dtype=np.uint8)
    decoded = Image.open(io.BytesIO(encode_png(grey)))
    assert decoded.mode == "L"
    assert np.array_equal(np.asarray(decoded), grey)


def test_the_cache_round_trips_as_a_read_only_memmap(tmp_path):
    voxels = np.arange(3 * 4 * 5, dtype=np.int16).reshape(3, 4, 5) - 30
    path = write_voxel_cache(voxels, tmp_path / "cache" / "venous.npy")
    opened = open_voxel_cache(path)
    assert isinstance(opened, np.memmap)
    assert opened.dtype == np.int16 and opened.flags.c_contiguous
    assert np.array_equal(opened, voxels)
    assert not opened.flags.writeable
    assert [p.name for p in path.parent.iterdir()] == ["venous.npy"]  # no temp file left


def test_the_cache_refuses_anything_but_int16_zyx(tmp_path):
    with pytest.raises(VoxelCacheError):
        write_voxel_cache(np.zeros((3, 4, 5), np.float32), tmp_path / "a.npy")
    np.save(tmp_path / "b.npy", np.zeros((4, 5), np.int16))
    with pytest.raises(VoxelCacheError):
        open_voxel_cache(tmp_path / "b.npy")


def test_render_slice_png_shows_the_requested_slice(tmp_path):
    voxels = np.full((3, 6, 8), -1000, dtype=np.int16)
    voxels[1, 2:4, 3:6] = 40
    path = write_voxel_cache(voxels, tmp_path / "v.npy")
    png = render_slice_png(path, 1, 400, 40)
    pixels = np.asarray(Image.open(io.BytesIO(png)))
    assert pixels.shape == (6, 8)
    assert (pixels[2:4, 3:6] == 128).all()
    assert pixels.sum() == 128 * 6
    assert render_slice_png(open_voxel_cache(path), 1, 400, 40) == png


def test_render_slice_png_refuses_a_slice_out_of_range(tmp_path):
    path = write_voxel_cache(np.zeros((3, 4, 4), np.int16), tmp_path / "v.npy")
    with pytest.raises(IndexError):
        render_slice_png(path, 3, 400, 40)
