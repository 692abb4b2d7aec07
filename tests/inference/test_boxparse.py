"""Box answers as models really write them, and the many ways they go wrong."""

from __future__ import annotations

import pytest

from annotations.inference.boxparse import ParsedBox, parse_box

SIZE = {"width": 512, "height": 400}


def box_of(text: str | None, **options) -> tuple[float, float, float, float] | None:
    parsed = parse_box(text, **{**SIZE, **options})
    return None if parsed is None else parsed.box


@pytest.mark.parametrize(
    ("reply", "source"),
    [
        ("[12, 30, 80, 95]", "json"),
        ("The tumor is at [12, 30, 80, 95].", "json"),
        ("(12,30,80,95)", "brackets"),
        ("Bounding box: (12, 30, 80, 95)", "brackets"),
        ("[12 30 80 95]", "brackets"),
        ("[12px, 30px, 80px, 95px]", "brackets"),
        ('{"x0": 12, "y0": 30, "x1": 80, "y1": 95}', "json"),
        ('{"x1": 12, "y1": 30, "x2": 80, "y2": 95}', "json"),
        ('{"xmin": 12, "ymin": 30, "xmax": 80, "ymax": 95}', "json"),
        ('{"x_min": "12", "y_min": "30", "x_max": "80", "y_max": "95"}', "json"),
        ('{"left": 12, "top": 30, "right": 80, "bottom": 95}', "json"),
        ('{"x": 12, "y": 30, "w": 68, "h": 65}', "json"),
        ('{"x": 12, "y": 30, "width": 68, "height": 65}', "json"),
        ('```json\n[{"bbox_2d": [12, 30, 80, 95], "label": "tumor"}]\n```', "json"),
        ('{"bbox": [12, 30, 80, 95], "label": "lesion"}', "json"),
        ('{"box": {"x0": 12, "y0": 30, "x1": 80, "y1": 95}}', "json"),
        ("[[12, 30, 80, 95]]", "json"),
        ("(12, 30), (80, 95)", "points"),
        ("from (12, 30) to (80, 95)", "points"),
        ("top-left corner at (12, 30) and bottom-right corner at (80, 95)", "points"),
        ("x0=12, y0=30, x1=80, y1=95", "keys"),
        ("xmin: 12 ymin: 30 xmax: 80 ymax: 95", "keys"),
        ("12, 30, 80, 95", "bare"),
        ("Answer: 12,30,80,95", "bare"),
    ],
)
def test_it_reads_the_box_in_every_common_form(reply: str, source: str) -> None:
    parsed = parse_box(reply, **SIZE)

    assert parsed == ParsedBox((12.0, 30.0, 80.0, 95.0), source=source, scale="pixels")


@pytest.mark.parametrize(
    "reply",
    [
        None,
        "",
        "   ",
        "none",
        "I cannot locate a tumor in this image.",
        "There is no lesion on slice 45 of 120.",
        "[12, 30, 80]",
        "[12, 30, 80, 95, 100]",
        "12, 30, 80, 95, 100",
        "(12, 30)",
        '{"x0": 12, "y0": 30, "x1": 80}',
        '{"x": 12, "y": 30}',
        '{"bbox": "somewhere in the antrum"}',
        '{"bbox": [12, 30, NaN, 95]}',
        "[12, 30, Infinity, 95]",
        "[true, false, true, false]",
        '["a", "b", "c", "d"]',
        "{not json [",
        "<think>[1, 2, 3, 4] looks right</think>I am not sure.",
        "x0=12 and nothing else",
        "version 1.2.3.4",
    ],
)
def test_it_finds_nothing_in_replies_without_one_box(reply: str | None) -> None:
    assert parse_box(reply, **SIZE) is None


def test_it_takes_the_first_of_several_boxes() -> None:
    assert box_of("[1, 2, 30, 40] and [100, 100, 200, 200]") == (1, 2, 30, 40)
    assert box_of('[{"bbox_2d": [5, 6, 7, 8]}, {"bbox_2d": [9, 10, 11, 12]}]') == (5, 6, 7, 8)
    assert box_of("x0=1, y0=2, x1=30, y1=40; second x0=100, y0=100, x1=200, y1=200") == (
        1,
        2,
        30,
        40,
    )


def test_it_skips_numbers_that_are_not_a_box() -> None:
    # a one-number list and the slice number come first; the box comes later
    assert box_of("On slice [45] (venous phase) the lesion is at [120, 80, 200, 160].") == (
        120,
        80,
        200,
        160,
    )


def test_it_ignores_draft_boxes_in_reasoning() -> None:
    reply = "<think>maybe [0, 0, 10, 10]? no.</think>Final answer: [100, 120, 200, 220]"

    assert box_of(reply) == (100, 120, 200, 220)


def test_it_swaps_corners_given_in_the_wrong_order() -> None:
    parsed = parse_box("[80, 95, 12, 30]", **SIZE)

    assert parsed.box == (12, 30, 80, 95)
    assert parsed.swapped and not parsed.clipped
    assert box_of("[80, 30, 12, 95]") == (12, 30, 80, 95)


def test_it_clips_coordinates_outside_the_image() -> None:
    parsed = parse_box("[-5, 10, 600, 450]", **SIZE)

    assert parsed.box == (0, 10, 512, 400)
    assert parsed.clipped and not parsed.swapped


def test_a_box_entirely_outside_the_image_is_kept_with_no_area() -> None:
    parsed = parse_box("[600, 500, 700, 650]", **SIZE)

    assert parsed.box == (512, 400, 512, 400)
    assert parsed.clipped


def test_it_reads_unit_coordinates_automatically() -> None:
    parsed = parse_box("[0.1, 0.25, 0.5, 0.75]", **SIZE)

    assert parsed.box == pytest.approx((51.2, 100, 256, 300))
    assert parsed.scale == "unit"
    # integers 0 and 1 alone are pixels: a one-pixel box is more likely than a whole image
    assert parse_box("[0, 0, 1, 1]", **SIZE).scale == "pixels"


def test_it_reads_qwen2vl_box_tokens_per_mille() -> None:
    parsed = parse_box(
        "<|object_ref_start|>tumor<|object_ref_end|><|box_start|>(100,250),(500,750)<|box_end|>",
        **SIZE,
    )

    assert parsed.box == pytest.approx((51.2, 100, 256, 300))
    assert (parsed.source, parsed.scale) == ("qwen", "per_mille")


def test_an_explicit_scale_overrides_the_guess() -> None:
    assert box_of("[100, 250, 500, 750]", scale="per_mille") == pytest.approx((51.2, 100, 256, 300))
    assert box_of("[0.5, 0.5, 1, 1]", scale="pixels") == (0.5, 0.5, 1, 1)
    assert box_of("[1, 1, 2, 2]", scale="unit") == (512, 400, 512, 400)


def test_it_rejects_a_bad_scale_or_image_size() -> None:
    with pytest.raises(ValueError, match="scale"):
        parse_box("[1, 2, 3, 4]", width=10, height=10, scale="percent")
    with pytest.raises(ValueError, match="size"):
        parse_box("[1, 2, 3, 4]", width=0, height=10)


@pytest.mark.parametrize(
    "reply",
    [
        "[" * 5000,
        "[1," * 3000,
        '{"a":' * 3000,
        "(1, 2" * 20000,
        "{" * 100_000,
        "(1" + " " * 3000 + "x",
        "x0 = 1 " * 10000,
        "1," * 30000,
    ],
)
def test_runaway_replies_neither_crash_nor_find_a_box(reply: str) -> None:
    assert parse_box(reply, **SIZE) is None


def test_a_box_after_a_runaway_reply_is_not_looked_for() -> None:
    assert box_of("x" * 60_000 + "[1, 2, 3, 4]") is None
    assert box_of("x" * 40_000 + "[1, 2, 3, 4]") == (1, 2, 3, 4)
