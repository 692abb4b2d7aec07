from __future__ import annotations

import io
import json

import pytest

from annotations.formats.coco import write_coco

IMAGES = [
    {"id": 10, "file_name": "frame_10.jpg", "width": 640, "height": 480},
    {"id": 11, "file_name": "frame_11.jpg", "width": 320, "height": 240},
]


def coco(boxes: list[dict], categories: list[str] | None = None) -> dict:
    out = io.StringIO()
    write_coco(out, IMAGES, boxes, categories or ["polyp", "ulcer"])
    return json.loads(out.getvalue())


def test_it_writes_images_annotations_and_categories_in_coco_shape():
    document = coco(
        [
            {"image_id": 10, "label": "ulcer", "x": 5, "y": 6, "width": 100, "height": 50},
            {
                "image_id": 11,
                "label": "polyp",
                "x": 0.5,
                "y": 1.5,
                "width": 10,
                "height": 20,
                "score": 0.9,
            },
        ]
    )
    assert document["categories"] == [
        {"id": 1, "name": "polyp", "supercategory": ""},
        {"id": 2, "name": "ulcer", "supercategory": ""},
    ]
    assert document["images"] == IMAGES
    assert document["annotations"] == [
        {
            "id": 1,
            "image_id": 10,
            "category_id": 2,
            "bbox": [5, 6, 100, 50],
            "area": 5000,
            "iscrowd": 0,
        },
        {
            "id": 2,
            "image_id": 11,
            "category_id": 1,
            "bbox": [0.5, 1.5, 10, 20],
            "area": 200,
            "iscrowd": 0,
            "score": 0.9,
        },
    ]


def test_it_writes_a_file_without_boxes():
    assert coco([])["annotations"] == []


@pytest.mark.parametrize(
    ("box", "message"),
    [
        (
            {"image_id": 99, "label": "polyp", "x": 0, "y": 0, "width": 1, "height": 1},
            "not exported",
        ),
        (
            {"image_id": 10, "label": "tumor", "x": 0, "y": 0, "width": 1, "height": 1},
            "label 'tumor'",
        ),
        ({"image_id": 10, "label": "polyp", "x": 0, "y": 0, "width": 0, "height": 1}, "empty"),
        ({"image_id": 11, "label": "polyp", "x": 300, "y": 0, "width": 30, "height": 1}, "outside"),
    ],
)
def test_it_refuses_boxes_that_cannot_be_right(box: dict, message: str):
    with pytest.raises(ValueError, match=message):
        coco([box])


def test_it_refuses_duplicate_images_and_categories():
    with pytest.raises(ValueError, match="duplicate image id"):
        write_coco(io.StringIO(), [IMAGES[0], IMAGES[0]], [], ["polyp"])
    with pytest.raises(ValueError, match="duplicate category"):
        write_coco(io.StringIO(), IMAGES, [], ["polyp", "polyp"])
