"""The boxes of a case a reviewer still reviews stay hidden wherever they are read: the case
page's viewer, the review page's case panel, the boxes API (issue 29, the case as the unit of
blinding; the one rule is selectors.visibility.boxes_visible_to)."""

from __future__ import annotations

import json

from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Box, Item
from annotations.services import boxes as box_services
from annotations.services.human_baseline import human_baseline_open
from annotations.services.review import review_submit


def _viewer_boxes(response) -> set[int]:
    assert response.status_code == 200, response.status_code
    config = response.content.decode().split('id="ct-config" type="application/json">')[1]
    volumes = json.loads(config.split("</script>")[0])["volumes"]
    return {box["id"] for volume in volumes for box in volume["boxes"]}


def _api_boxes(user, volume) -> set[int]:
    api = APIClient()
    api.force_authenticate(user)
    return {box["id"] for box in api.get(reverse("api-volume-boxes", args=[volume.pk])).json()}


def _bob_draws(small_case, people):
    volume = small_case.volumes.get(phase="venous")
    box = box_services.box_create_3d(
        volume=volume, label="tumor", voxel=[1, 1, 1, 9, 9, 3], user=people["reviewer2"]
    )
    return volume, box


def test_a_reviewer_done_with_her_reviews_does_not_see_the_others_box_before_every_review_is_in(
    client, small_case, people
):
    alice, bob = people["reviewer"], people["reviewer2"]
    for item in Item.objects.filter(case=small_case):
        review_submit(item=item, reviewer=alice, verdict="accept", version=item.version)
    volume, bobs = _bob_draws(small_case, people)  # bob is still reviewing the case
    client.force_login(alice)
    assert bobs.pk not in _viewer_boxes(client.get(reverse("case", args=[small_case.pk])))
    assert bobs.pk not in _api_boxes(alice, volume)
    # Not blinded: the curator sees it, and bob his own.
    assert bobs.pk in _api_boxes(people["curator"], volume)
    assert bobs.pk in _api_boxes(bob, volume)


def test_the_case_panel_of_a_settled_item_hides_the_box_of_an_item_she_still_reviews(
    client, small_case, people
):
    alice, bob = people["reviewer"], people["reviewer2"]
    settled = Item.objects.filter(case=small_case, kind="mcq").order_by("pk").first()
    for person in (alice, bob):
        review_submit(item=settled, reviewer=person, verdict="accept", version=settled.version)
    settled.refresh_from_db()
    assert settled.status == "agreed"
    _volume, bobs = _bob_draws(small_case, people)  # alice's box item is still open
    client.force_login(alice)
    page = client.get(reverse("review-item", args=[settled.pk]))
    shown = _viewer_boxes(page)
    assert shown, "the imported target box is shown"
    assert bobs.pk not in shown


def test_a_baseline_clinician_sees_no_target_box_on_the_case_page_or_the_api(
    client, small_case, people
):
    clinician = people["adjudicator"]
    human_baseline_open(
        benchmark=small_case.benchmark, clinician=clinician, opened_by=people["curator"]
    )
    target = Item.objects.get(case=small_case, kind="box").target["box"]
    client.force_login(clinician)
    assert target not in _viewer_boxes(client.get(reverse("case", args=[small_case.pk])))
    for volume in small_case.volumes.all():
        assert target not in _api_boxes(clinician, volume)
    assert target in _api_boxes(people["curator"], Box.objects.get(pk=target).volume)


def test_once_every_review_of_the_case_is_in_its_reviewers_see_each_others_boxes(
    client, small_case, people
):
    alice, bob = people["reviewer"], people["reviewer2"]
    volume, bobs = _bob_draws(small_case, people)
    for item in Item.objects.filter(case=small_case):
        for person in (alice, bob):
            review_submit(item=item, reviewer=person, verdict="accept", version=item.version)
    # As their reviews are (item_visibility), the boxes are readable once every review is in.
    assert bobs.pk in _api_boxes(alice, volume)
    client.force_login(alice)
    assert bobs.pk in _viewer_boxes(client.get(reverse("case", args=[small_case.pk])))
