"""Deleting a box is withdrawing one's own proposal: a revision, 409 when stale, undone by a
restore; others' boxes stay the adjudicator's or the curator's to accept or reject."""

from __future__ import annotations

import io
import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Box
from annotations.services import boxes as box_services
from annotations.services.box_export import case_boxes_for_export, coco_for_benchmark
from annotations.services.errors import DomainError, NotAllowedError
from tests.factories import PASSWORD

TUMOR = {"label": "tumor", "voxel": [4, 4, 2, 20, 20, 5]}


@pytest.fixture
def api():
    return APIClient()


def as_user(api, user):
    api.logout()
    api.login(username=user.username, password=PASSWORD)
    return api


def drawn_by(api, user, case) -> dict:
    url = reverse("api-volume-boxes", args=[case.volumes.get(phase="venous").pk])
    response = as_user(api, user).post(url, TUMOR, format="json")
    assert response.status_code == 201
    return response.json()


def test_a_reviewer_withdraws_their_own_proposal_with_a_revision(api, small_case, people):
    box = drawn_by(api, people["reviewer"], small_case)
    url = reverse("api-box", args=[box["id"]])

    response = api.delete(f"{url}?version=1")

    assert response.status_code == 200
    assert (response.json()["state"], response.json()["version"]) == ("withdrawn", 2)
    stored = Box.objects.get(pk=box["id"])
    assert stored.state == "withdrawn"
    assert [(r.reason, r.state, r.author) for r in stored.revisions.all()] == [
        ("drawn", "proposed", people["reviewer"]),
        ("withdrawn", "withdrawn", people["reviewer"]),
    ]


def test_the_version_may_come_in_the_body_and_a_stale_one_conflicts(api, small_case, people):
    box = drawn_by(api, people["reviewer"], small_case)
    url = reverse("api-box", args=[box["id"]])
    api.patch(url, {"version": 1, "label": "stomach"}, format="json")

    stale = api.delete(url, {"version": 1}, format="json")
    assert stale.status_code == 409 and stale.json()["current_version"] == 2
    assert Box.objects.get(pk=box["id"]).state == "proposed"
    assert api.delete(url, {"version": 2, "note": "drawn twice"}, format="json").status_code == 200
    assert Box.objects.get(pk=box["id"]).revisions.last().note == "drawn twice"
    missing = api.delete(url)
    assert missing.status_code == 400 and "version" in missing.json()


def test_nobody_deletes_a_box_that_is_not_their_proposal(api, small_case, people):
    imported = Box.objects.get(volume__case=small_case)  # an imported box: nobody's proposal
    mine = drawn_by(api, people["reviewer"], small_case)
    for user in ("reviewer", "reviewer2", "curator"):
        response = as_user(api, people[user]).delete(
            reverse("api-box", args=[imported.pk]) + "?version=1"
        )
        assert response.status_code == 403 and response.json()["code"] == "not_your_box", user
    # The other reviewer, blinded to this proposal, does not find it; the curator may not.
    for user, refused in (("reviewer2", 404), ("curator", 403)):
        response = as_user(api, people[user]).delete(
            reverse("api-box", args=[mine["id"]]) + "?version=1"
        )
        assert response.status_code == refused, user
    assert (
        as_user(api, people["outsider"])
        .delete(reverse("api-box", args=[mine["id"]]) + "?version=1")
        .status_code
        == 403
    )  # no role at all
    api.logout()
    assert api.delete(reverse("api-box", args=[mine["id"]]) + "?version=1").status_code == 401
    assert set(Box.objects.values_list("state", flat=True)) == {"proposed"}
    assert Box.objects.get(pk=imported.pk).version == 1


def test_a_reviewer_outside_the_benchmark_gets_404(api, small_case, people):
    from tests.factories import make_user

    mine = drawn_by(api, people["reviewer"], small_case)
    stranger = make_user("frank", "reviewer")
    response = as_user(api, stranger).delete(reverse("api-box", args=[mine["id"]]) + "?version=1")
    assert response.status_code == 404


def test_a_withdrawn_proposal_can_be_changed_only_by_restoring_it(api, small_case, people):
    box = drawn_by(api, people["reviewer"], small_case)
    url = reverse("api-box", args=[box["id"]])
    api.delete(f"{url}?version=1")
    assert api.patch(url, {"version": 2, "label": "stomach"}, format="json").status_code == 403
    restore_url = reverse("api-box-restore", args=[box["id"]])
    assert api.get(restore_url).status_code == 405
    assert (
        as_user(api, people["reviewer2"])
        .post(restore_url, {"version": 2}, format="json")
        .status_code
        == 404  # blinded to the other reviewer's boxes
    )

    restored = as_user(api, people["reviewer"]).post(restore_url, {"version": 2}, format="json")

    assert restored.status_code == 200
    assert (restored.json()["state"], restored.json()["version"]) == ("proposed", 3)
    reasons = list(Box.objects.get(pk=box["id"]).revisions.values_list("reason", flat=True))
    assert reasons == ["drawn", "withdrawn", "restored"]
    assert api.post(restore_url, {"version": 3}, format="json").status_code == 403


def test_a_withdrawn_box_cannot_be_accepted_or_rejected(small_case, people):
    box = box_services.box_create_3d(
        volume=small_case.volumes.get(phase="venous"), user=people["reviewer"], **TUMOR
    )
    box = box_services.box_withdraw(box=box, version=1, user=people["reviewer"])
    with pytest.raises(DomainError) as refused:
        box_services.box_review(box=box, version=2, state="accepted", user=people["curator"])
    assert refused.value.code == "withdrawn"
    assert Box.objects.get(pk=box.pk).state == "withdrawn"


def test_withdrawn_boxes_are_left_out_of_exports_and_counts(small_case, people):
    from annotations.selectors.cases import gastricx_cases

    volume = small_case.volumes.get(phase="venous")
    box = box_services.box_create_3d(volume=volume, user=people["reviewer"], **TUMOR)
    flat = box_services.box_create_2d(
        image=small_case.endoscopy_image,
        label="lesion",
        coords=[1, 1, 9, 9],
        user=people["reviewer"],
    )
    assert len(case_boxes_for_export(small_case)[1]["boxes"]) == 2
    assert gastricx_cases(people["curator"]).get().n_boxes == 2

    box_services.box_withdraw(box=box, version=1, user=people["reviewer"])
    box_services.box_withdraw(box=flat, version=1, user=people["reviewer"])

    assert len(case_boxes_for_export(small_case)[1]["boxes"]) == 1  # the imported one
    assert gastricx_cases(people["curator"]).get().n_boxes == 1
    out = io.StringIO()
    coco_for_benchmark(small_case.benchmark, out)
    assert json.loads(out.getvalue())["annotations"] == []


def test_a_reviewer_no_longer_reviewing_the_case_cannot_withdraw(small_case, people):
    from annotations.models import Assignment

    box = box_services.box_create_3d(
        volume=small_case.volumes.get(phase="venous"), user=people["reviewer"], **TUMOR
    )
    Assignment.objects.filter(reviewer=people["reviewer"]).delete()
    with pytest.raises(NotAllowedError):
        box_services.box_withdraw(box=box, version=1, user=people["reviewer"])


def test_a_2d_box_on_the_endoscopy_image_is_withdrawn_and_restored_through_the_api(
    api, small_case, people
):
    image_url = reverse("api-image-boxes", args=[small_case.endoscopy_image.sha256])
    drawn = as_user(api, people["reviewer"]).post(
        image_url, {"label": "lesion", "box": [10, 5, 60, 40]}, format="json"
    )
    box_url = reverse("api-box", args=[drawn.json()["id"]])
    withdrawn = api.delete(f"{box_url}?version=1")
    assert (withdrawn.status_code, withdrawn.json()["state"]) == (200, "withdrawn")
    listed = api.get(image_url).json()
    assert [(b["id"], b["state"]) for b in listed] == [(drawn.json()["id"], "withdrawn")]
    restored = api.post(
        reverse("api-box-restore", args=[drawn.json()["id"]]), {"version": 2}, format="json"
    )
    assert (restored.status_code, restored.json()["state"]) == (200, "proposed")


def test_deleting_my_already_withdrawn_box_is_a_conflict_not_a_refusal(api, small_case, people):
    box = drawn_by(api, people["reviewer"], small_case)
    url = reverse("api-box", args=[box["id"]])
    assert api.delete(f"{url}?version=1").status_code == 200
    again = api.delete(f"{url}?version=1")  # a second tab, still at version 1
    assert again.status_code == 409 and again.json()["current_version"] == 2
    assert Box.objects.get(pk=box["id"]).revisions.count() == 2
