"""Coordinate options ([x0, y0, x1, y1]) read as boxes: normalized or pixels, said explicitly."""

from __future__ import annotations

import pytest

from annotations.imaging.option_boxes import NORMALIZED, PIXELS, option_boxes, parse_box


def test_fractions_of_the_image_size_are_read_as_normalized():
    options = [("A", "[0.10, 0.20, 0.50, 0.60]"), ("B", "[0.5, 0.5, 1.0, 1.0]")]
    result = option_boxes(options, width=200, height=100)
    assert result.convention == NORMALIZED
    assert [b.letter for b in result.boxes] == ["A", "B"]
    assert result.boxes[0].box == pytest.approx((20, 20, 100, 60))
    assert result.boxes[1].box == pytest.approx((100, 50, 200, 100))
    assert all(b.fits for b in result.boxes)


def test_numbers_beyond_one_are_pixels_and_a_box_outside_the_image_is_reported():
    options = [("A", "[12, 30, 80, 95]"), ("B", "(0.5, 4, 300, 20)"), ("C", "")]
    result = option_boxes(options, width=200, height=100)
    assert result.convention == PIXELS
    assert [b.box for b in result.boxes] == [(12, 30, 80, 95), (0.5, 4, 300, 20)]
    assert [b.fits for b in result.boxes] == [True, False]


def test_swapped_corners_are_ordered():
    result = option_boxes([("A", "[0.6, 0.8, 0.2, 0.1]"), ("B", "[0,0,1,1]")], 10, 10)
    assert result.boxes[0].box == pytest.approx((2, 1, 6, 8))


@pytest.mark.parametrize(
    "options",
    [
        [("A", "Upper left"), ("B", "[0.1, 0.2, 0.3, 0.4]")],  # a mixed question: not boxes
        [("A", "[0.1, 0.2, 0.3, 0.4]")],  # one option is not a choice of boxes
        [("A", "[0.1, 0.2, 0.3]"), ("B", "[0.1, 0.2, 0.3, 0.4]")],
        [("A", "2"), ("B", "3")],
    ],
)
def test_ordinary_questions_have_no_option_boxes(options):
    assert option_boxes(options, width=100, height=100) is None


def test_parse_box_accepts_spaces_signs_and_bare_decimals():
    assert parse_box(" [ .25 ,0.5, +1 , 2. ] ") == (0.25, 0.5, 1.0, 2.0)
    assert parse_box("[1, 2, 3, 4] px") is None
    assert parse_box(None) is None
