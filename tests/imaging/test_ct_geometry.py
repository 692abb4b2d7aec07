from __future__ import annotations

import math

import pytest

from annotations.imaging.geometry import (
    BoxError,
    VolumeGeometry,
    box_mm_to_voxel,
    box_voxel_to_mm,
    index_to_lps,
    lps_to_index,
    validate_voxel_box,
)

FEET_FIRST = (-1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, -1.0)
AWKWARD = VolumeGeometry(
    spacing=(0.7, 0.7, 2.5), origin=(-250.3, 180.7, 1200.5), direction=FEET_FIRST
)
COS30, SIN30 = math.cos(math.radians(30)), math.sin(math.radians(30))
OBLIQUE = (1.0, 0.0, 0.0, 0.0, COS30, -SIN30, 0.0, SIN30, COS30)


def test_it_maps_an_index_through_spacing_direction_and_origin():
    point = index_to_lps((10, 20, 3), AWKWARD.spacing, AWKWARD.origin, AWKWARD.direction)
    # x: -250.3 - 10*0.7, y: 180.7 + 20*0.7, z: 1200.5 - 3*2.5
    assert point == pytest.approx((-257.3, 194.7, 1193.0), abs=1e-9)


def test_it_maps_an_index_on_an_oblique_volume():
    point = index_to_lps((0, 2, 4), (1.0, 1.0, 2.0), (10.0, 20.0, 30.0), OBLIQUE)
    # y: 20 + 2*cos30 - 8*sin30, z: 30 + 2*sin30 + 8*cos30
    assert point == pytest.approx((10.0, 17.7320508076, 37.9282032303), abs=1e-9)


def test_lps_to_index_inverts_index_to_lps():
    geometry = VolumeGeometry((0.7, 0.8, 2.5), (-250.3, 180.7, 1200.5), OBLIQUE)
    index = (12.25, 7.5, 3.0)
    point = index_to_lps(index, geometry.spacing, geometry.origin, geometry.direction)
    back = lps_to_index(point, geometry.spacing, geometry.origin, geometry.direction)
    assert back == pytest.approx(index, abs=1e-9)


def test_box_mm_corners_are_centres_of_first_and_last_voxel():
    corners = box_voxel_to_mm([10, 20, 3, 15, 30, 7], AWKWARD)
    # last voxel is (14, 29, 6): x -250.3 - 9.8, y 180.7 + 20.3, z 1200.5 - 15
    assert corners[0] == pytest.approx([-257.3, 194.7, 1193.0], abs=1e-9)
    assert corners[1] == pytest.approx([-260.1, 201.0, 1185.5], abs=1e-9)


def test_a_box_survives_a_round_trip_through_millimetres():
    voxel = [10, 20, 3, 15, 30, 7]
    corners = box_voxel_to_mm(voxel, AWKWARD)
    assert box_mm_to_voxel(corners, AWKWARD, (40, 64, 64)) == tuple(voxel)


def test_a_box_moves_to_a_phase_with_other_geometry_through_patient_coordinates():
    # The venous series starts 5 mm lower and runs head-first with 1.25 mm slices.
    venous = VolumeGeometry((0.7, 0.7, 1.25), (-257.3, 180.7, 1180.5), (-1, 0, 0, 0, 1, 0, 0, 0, 1))
    corners = box_voxel_to_mm([10, 20, 3, 15, 30, 7], AWKWARD)  # z 1193.0 .. 1185.5 mm
    moved = box_mm_to_voxel(corners, venous, (40, 64, 64))
    # x: (257.3 - 257.3)/0.7 = 0 .. 4; z: (1185.5 - 1180.5)/1.25 = 4 .. (1193 - 1180.5)/1.25 = 10
    assert moved == (0, 20, 4, 5, 30, 11)


def test_a_box_partly_outside_the_other_volume_is_clipped():
    small = VolumeGeometry((1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    assert box_mm_to_voxel([[-5, 2, 1], [3, 50, 2]], small, (4, 10, 10)) == (0, 2, 1, 4, 10, 3)


def test_a_box_entirely_outside_the_volume_is_refused():
    small = VolumeGeometry((1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    with pytest.raises(BoxError, match="outside"):
        box_mm_to_voxel([[100, 100, 100], [120, 120, 120]], small, (4, 10, 10))


@pytest.mark.parametrize(
    ("voxel", "message"),
    [
        ([1, 2, 3, 4, 5], "6 integers"),
        ([1, 2, 3, 4, 5, 6.5], "integers"),
        ([5, 2, 3, 5, 6, 7], "x0 < x1"),
        ([-1, 2, 3, 4, 6, 7], "x0 < x1"),
        ([1, 2, 3, 4, 6, 41], "z1=41 exceeds"),
    ],
)
def test_it_rejects_malformed_or_oversized_voxel_boxes(voxel, message):
    with pytest.raises(BoxError, match=message):
        validate_voxel_box(voxel, (40, 64, 64))


def test_a_box_touching_the_far_edges_is_valid():
    assert validate_voxel_box([0, 0, 0, 64, 32, 40], (40, 32, 64)) == (0, 0, 0, 64, 32, 40)
