"""The review page's 2D box tool: its configuration, coordinate options read and said."""

from __future__ import annotations

import json
import re

from django.urls import reverse

from annotations.models import Item
from annotations.services.review import assignments_create, review_submit
from tests.factories import jpeg_bytes, make_benchmark, make_item
from tests.review.helpers import assigned_benchmark
from tests.review.test_views import HTMX, ViewTestCase


def box_config(response) -> dict:
    html = response.content.decode()
    found = re.search(r'<script id="box-tool-config" type="application/json">(.*?)</script>', html)
    assert found, "no box tool on the page"
    return json.loads(found.group(1))


class BoxToolPageTests(ViewTestCase):
    def test_an_ordinary_item_offers_drawing_but_no_option_boxes(self):
        _, (item, _) = assigned_benchmark(self.people)
        self.login("reviewer")
        config = box_config(self.client.get(reverse("review-item", args=[item.pk])))
        [image] = config["images"]
        stored = item.item_images.get().image
        self.assertEqual((image["sha256"], image["width"]), (stored.sha256, stored.width))
        self.assertEqual((image["optionBoxes"], image["convention"]), ([], ""))
        self.assertTrue(config["canDraw"])
        self.assertEqual(config["username"], self.people["reviewer"].username)
        self.assertEqual(config["boxUrl"], "/api/boxes/{id}/")

    def test_coordinate_options_come_as_pixel_boxes_with_the_convention_said(self):
        benchmark = make_benchmark("roi", family="endobench")
        item = make_item(
            benchmark,
            index=1,
            image=jpeg_bytes(size=(200, 100)),
            options=["[0.1, 0.2, 0.5, 0.6]", "[0.5, 0.5, 1.0, 1.0]"],
            answer="A",
        )
        assignments_create(
            benchmark=benchmark, reviewers=[self.people["reviewer"], self.people["reviewer2"]]
        )
        self.login("reviewer")
        response = self.client.get(reverse("review-item", args=[item.pk]), **HTMX)
        [image] = box_config(response)["images"]
        self.assertEqual(image["convention"], "normalized")
        self.assertEqual(
            image["optionBoxes"],
            [
                {"letter": "A", "box": [20.0, 20.0, 100.0, 60.0], "fits": True},
                {"letter": "B", "box": [100.0, 50.0, 200.0, 100.0], "fits": True},
            ],
        )
        self.assertContains(response, "fractions of the image size (normalized, 0–1)")

    def test_a_settled_item_is_looked_at_not_drawn_on(self):
        _, (item, _) = assigned_benchmark(self.people)
        for reviewer in ("reviewer", "reviewer2"):
            item = Item.objects.get(pk=item.pk)
            review_submit(
                item=item, reviewer=self.people[reviewer], verdict="accept", version=item.version
            )
        self.assertEqual(Item.objects.get(pk=item.pk).status, "agreed")
        self.login("reviewer")
        response = self.client.get(reverse("review-item", args=[item.pk]))
        self.assertFalse(box_config(response)["canDraw"])
        self.assertNotContains(response, "data-box-draw")
        self.assertContains(response, "drawing them is for the item")
