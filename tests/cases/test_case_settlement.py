"""The case is the unit of blinding: a person still reviewing a case settles nothing in it, and
a box is judged only through the adjudication of its own item, never by its author (issue 29)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, Box, Item
from annotations.selectors.review import adjudication_queue
from annotations.services import boxes as box_services
from annotations.services.errors import NotAllowedError
from annotations.services.review import item_adjudicate, review_submit
from annotations.services.users import user_ensure
from tests.factories import PASSWORD


def _dispute(item, people) -> Item:
    review_submit(item=item, reviewer=people["reviewer"], verdict="accept", version=item.version)
    review_submit(
        item=item, reviewer=people["reviewer2"], verdict="reject", reason="ambiguous",
        version=item.version,
    )  # fmt: skip
    item.refresh_from_db()
    assert item.status == "disputed"
    return item


@pytest.fixture
def carol_reviews_the_box_item(small_case, people):
    """The adjudicator is also a reviewer of the case's localization item (an open review),
    and the case's first question is disputed between the two other reviewers."""
    carol = people["adjudicator"]
    user_ensure(username=carol.username, password=PASSWORD, roles=("adjudicator", "reviewer"))
    box_item = Item.objects.get(case=small_case, kind="box")
    Assignment.objects.create(item=box_item, reviewer=carol, slot=3)
    question = Item.objects.filter(case=small_case, kind="mcq").order_by("pk").first()
    _dispute(question, people)
    return carol, box_item, question


def _api(user) -> APIClient:
    api = APIClient()
    api.login(username=user.username, password=PASSWORD)
    return api


def test_an_adjudicator_reviewing_the_case_judges_no_box_of_it(
    small_case, people, carol_reviews_the_box_item
):
    carol, box_item, _question = carol_reviews_the_box_item
    target = Box.objects.get(pk=box_item.target["box"])
    api = _api(carol)
    drawn = api.post(
        reverse("api-volume-boxes", args=[target.volume_id]),
        {"label": "tumor", "voxel": [1, 1, 1, 9, 9, 3]},
        format="json",
    )
    assert drawn.status_code == 201  # she reviews the case: she proposes boxes
    mine = drawn.json()["id"]
    accepted = api.post(
        reverse("api-box-review", args=[mine]), {"version": 1, "state": "accepted"}, format="json"
    )
    assert accepted.status_code == 403
    rejected = api.post(
        reverse("api-box-review", args=[target.pk]),
        {"version": 1, "state": "rejected"},
        format="json",
    )
    assert rejected.status_code == 403
    assert set(Box.objects.values_list("state", flat=True)) == {"proposed"}
    # The case page offers her no judgement either (the same rule decides it).
    page = api.get(reverse("case", args=[small_case.pk]))
    assert page.status_code == 200
    config = page.content.decode().split('id="ct-config" type="application/json">')[1]
    assert json.loads(config.split("</script>")[0])["canJudge"] is False


def test_an_adjudicator_never_judges_the_box_they_drew(small_case, people):
    carol = people["adjudicator"]
    user_ensure(username=carol.username, password=PASSWORD, roles=("adjudicator", "reviewer"))
    box_item = Item.objects.get(case=small_case, kind="box")
    question = Item.objects.filter(case=small_case, kind="mcq").order_by("pk").first()
    # She drew a box while reviewing a question of the case, and her review is settled since.
    Assignment.objects.create(item=question, reviewer=carol, slot=3)
    target = Box.objects.get(pk=box_item.target["box"])
    mine = box_services.box_create_3d(
        volume=target.volume, label="tumor", voxel=[1, 1, 1, 9, 9, 3], user=carol
    )
    Item.objects.filter(pk=question.pk).update(status="agreed")
    _dispute(box_item, people)
    with pytest.raises(NotAllowedError):
        box_services.box_review(box=mine, version=1, state="accepted", user=carol)
    # The target box of the disputed item is hers to judge: not her box, her review settled.
    judged = box_services.box_review(box=target, version=1, state="accepted", user=carol)
    assert judged.state == "accepted"


def test_an_adjudicator_reviewing_the_case_settles_no_item_of_it(
    small_case, people, carol_reviews_the_box_item
):
    carol, _box_item, question = carol_reviews_the_box_item
    assert question not in adjudication_queue(carol)
    with pytest.raises(NotAllowedError) as refused:
        item_adjudicate(item=question, adjudicator=carol, choice="a", version=question.version)
    assert refused.value.code == "case_in_review"
    api = _api(carol)
    page = api.get(reverse("adjudicate", args=[question.pk]))
    assert page.status_code == 403
    assert b"still reviewing this case" in page.content
    question.refresh_from_db()
    assert question.status == "disputed"
