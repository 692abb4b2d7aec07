"""Counts shown to a blinded reviewer do not move with the other reviewer's work (issue 29):
the review counts of the case page and the box counts of the case list (page and API)."""

from __future__ import annotations

import re

from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Item
from annotations.services import boxes as box_services
from annotations.services.review import review_submit
from tests.factories import PASSWORD


def _api_boxes(user) -> int:
    api = APIClient()
    api.force_authenticate(user)
    (row,) = api.get(reverse("api-benchmark-cases", args=["gxs"])).json()["results"]
    return row["boxes"]


def _review_counts(client, user, case) -> list[str]:
    client.login(username=user.username, password=PASSWORD)
    html = client.get(reverse("case", args=[case.pk])).content.decode()
    client.logout()
    return re.findall(r"(\d+) reviews?<", html)


def test_a_blinded_reviewer_sees_no_count_move_with_the_other_review(client, small_case, people):
    alice, bob = people["reviewer"], people["reviewer2"]
    before = (_api_boxes(alice), _review_counts(client, alice, small_case))

    item = Item.objects.filter(case=small_case).order_by("pk").first()
    review_submit(item=item, reviewer=bob, verdict="accept", version=item.version)
    volume = small_case.volumes.get(phase="venous")
    box_services.box_create_3d(volume=volume, label="tumor", voxel=[1, 1, 1, 9, 9, 3], user=bob)

    assert (_api_boxes(alice), _review_counts(client, alice, small_case)) == before
    # Those not blinded see the work: the curator, and bob his own.
    assert _api_boxes(people["curator"]) == before[0] + 1
    assert "1" in _review_counts(client, people["curator"], small_case)
    assert _api_boxes(bob) == before[0] + 1
