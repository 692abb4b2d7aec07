"""Case, volume and box API: access, geometry, boxes with mm corners, versions, copies."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Box, BoxRevision
from tests.factories import PASSWORD


@pytest.fixture
def api():
    return APIClient()


def as_user(api, user):
    api.login(username=user.username, password=PASSWORD)
    return api


def volume_of(case, phase: str = "arterial"):
    return case.volumes.get(phase=phase)


def test_every_endpoint_needs_a_login_and_a_role(api, small_case, people):
    volume = volume_of(small_case)
    box = Box.objects.get(volume__case=small_case)
    reads = [
        reverse("api-volume", args=[volume.pk]),
        reverse("api-case", args=[small_case.pk]),
        reverse("api-volume-boxes", args=[volume.pk]),
        reverse("api-image-boxes", args=[small_case.endoscopy_image.sha256]),
    ]
    writes = [
        (reverse("api-volume-boxes", args=[volume.pk]), "post"),
        (reverse("api-box", args=[box.pk]), "patch"),
        (reverse("api-box-review", args=[box.pk]), "post"),
        (reverse("api-box-copy", args=[box.pk]), "post"),
    ]
    for url in reads:
        assert api.get(url).status_code == 401, url
    for url, method in writes:
        assert getattr(api, method)(url, {}, format="json").status_code == 401, url
    as_user(api, people["outsider"])
    for url in reads:
        assert api.get(url).status_code == 403, url
    for url, method in writes:
        assert getattr(api, method)(url, {}, format="json").status_code == 403, url
    assert Box.objects.count() == 1


def test_wrong_methods_are_refused(api, small_case, people):
    as_user(api, people["reviewer"])
    volume = volume_of(small_case)
    assert api.put(reverse("api-volume", args=[volume.pk]), {}).status_code == 405
    assert api.delete(reverse("api-case", args=[small_case.pk])).status_code == 405
    assert api.delete(reverse("api-volume-boxes", args=[volume.pk])).status_code == 405


def test_a_volume_gives_its_phase_shape_and_exact_geometry(api, small_case, people):
    volume = volume_of(small_case, "venous")
    data = as_user(api, people["reviewer"]).get(reverse("api-volume", args=[volume.pk])).json()
    assert data["phase"] == "venous"
    assert data["shape"] == [7, 40, 32]
    assert data["spacing"] == pytest.approx([0.8, 0.7, 5.0])
    assert data["origin"] == pytest.approx([-251.6, 181.4, -890.0])
    assert data["direction"] == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


def test_a_case_gives_its_stage_indicators_volumes_and_questions(
    api, small_case, people, django_assert_num_queries
):
    url = reverse("api-case", args=[small_case.pk])
    as_user(api, people["reviewer"]).get(url)
    # session, user, roles, case, indicators, volumes, items
    with django_assert_num_queries(7):
        data = api.get(url).json()
    assert (data["case_id"], data["tnm"], data["benchmark"]) == ("GX-S-0001", "T3N1M0", "gxs")
    assert [v["phase"] for v in data["volumes"]] == ["arterial", "venous", "delayed"]
    assert [i["name"] for i in data["indicators"] if i["out_of_range"]] == ["CEA"]
    written = {i["name"]: (i["value"], i["value_text"]) for i in data["indicators"]}
    assert written["CA19-9"] == (None, "<0.6") and written["CEA"] == (12.4, "")
    # Assigned: 2 questions, 3 reports, 4 TNM labels, 1 tumor box, 3 retrieval pairs.
    assert [i["status"] for i in data["items"]] == ["in_review"] * 13
    assert api.get(reverse("api-case", args=[small_case.pk + 999])).status_code == 404


def test_posting_a_3d_box_answers_with_its_mm_corners_and_records_version_1(
    api, small_case, people
):
    volume = volume_of(small_case)
    url = reverse("api-volume-boxes", args=[volume.pk])
    response = as_user(api, people["reviewer"]).post(
        url, {"label": "lymph_node", "voxel": [4, 4, 2, 20, 20, 5]}, format="json"
    )
    assert response.status_code == 201
    data = response.json()
    # arterial: origin (-250, 180, -900), spacing (0.8, 0.7, 5).
    assert data["mm"][0] == pytest.approx([-250 + 4 * 0.8, 180 + 4 * 0.7, -900 + 2 * 5])
    assert data["mm"][1] == pytest.approx([-250 + 19 * 0.8, 180 + 19 * 0.7, -900 + 4 * 5])
    assert (data["phase"], data["version"], data["state"], data["author"]) == (
        "arterial",
        1,
        "proposed",
        "alice",
    )
    box = Box.objects.get(pk=data["id"])
    assert box.voxel == [4, 4, 2, 20, 20, 5]
    assert BoxRevision.objects.get(box=box).reason == "drawn"
    listed = api.get(url).json()
    assert [b["id"] for b in listed] == [box.pk]


@pytest.mark.parametrize(
    "payload",
    [
        {"label": "tumor", "voxel": [0, 0, 0, 33, 10, 2]},  # x1 beyond 32 columns
        {"label": "tumor", "voxel": [0, 0, 4, 10, 10, 7]},  # z1 beyond 6 slices
        {"label": "tumor", "voxel": [5, 0, 0, 5, 10, 2]},  # empty
        {"label": "polyp", "voxel": [0, 0, 0, 10, 10, 2]},  # not a CT label
        {"label": "tumor", "voxel": [0, 0, 0, 10]},
    ],
)
def test_a_box_outside_the_volume_or_malformed_is_refused(api, small_case, people, payload):
    url = reverse("api-volume-boxes", args=[volume_of(small_case).pk])
    response = as_user(api, people["reviewer"]).post(url, payload, format="json")
    assert response.status_code == 400
    assert Box.objects.count() == 1  # only the imported one


def test_the_box_list_takes_a_constant_number_of_queries(
    api, small_case, people, django_assert_num_queries
):
    volume = volume_of(small_case)
    url = reverse("api-volume-boxes", args=[volume.pk])
    as_user(api, people["reviewer"])
    for z in range(3):
        api.post(url, {"label": "tumor", "voxel": [1, 1, z, 9, 9, z + 1]}, format="json")
    with django_assert_num_queries(5):  # session, user, roles, volume, boxes with authors
        assert len(api.get(url).json()) == 3


def test_an_edit_based_on_a_stale_version_conflicts(api, small_case, people):
    box = Box.objects.get(volume__case=small_case)
    url = reverse("api-box", args=[box.pk])
    as_user(api, people["curator"])  # an imported box: only a curator's correction moves it
    first = api.patch(url, {"version": 1, "voxel": [8, 10, 1, 30, 38, 6]}, format="json")
    assert first.status_code == 200 and first.json()["version"] == 2
    assert first.json()["mm"][0] == pytest.approx([-251.6 + 8 * 0.8, 181.4 + 10 * 0.7, -885.0])
    stale = api.patch(url, {"version": 1, "label": "stomach"}, format="json")
    assert stale.status_code == 409 and stale.json()["current_version"] == 2
    box.refresh_from_db()
    assert (box.label, box.version, box.voxel) == ("tumor", 2, [8, 10, 1, 30, 38, 6])
    assert list(box.revisions.values_list("version", "reason")) == [
        (1, "imported"),
        (2, "corrected"),
    ]


def test_a_box_is_copied_to_another_phase_through_patient_coordinates(api, small_case, people):
    arterial, venous = volume_of(small_case), volume_of(small_case, "venous")
    as_user(api, people["reviewer"])
    drawn = api.post(
        reverse("api-volume-boxes", args=[arterial.pk]),
        {"label": "tumor", "voxel": [4, 4, 2, 20, 20, 5]},
        format="json",
    ).json()
    response = api.post(
        reverse("api-box-copy", args=[drawn["id"]]), {"volume": venous.pk}, format="json"
    )
    assert response.status_code == 201
    copy = response.json()
    # venous origin is (-251.6, 181.4, -890): +2 columns, -2 rows, -2 slices, by hand.
    assert copy["voxel"] == [6, 2, 0, 22, 18, 3]
    assert (copy["phase"], copy["source"]) == ("venous", "copied")
    assert copy["mm"][0] == pytest.approx(drawn["mm"][0])
    assert copy["mm"][1] == pytest.approx(drawn["mm"][1])
    same = api.post(
        reverse("api-box-copy", args=[drawn["id"]]), {"volume": arterial.pk}, format="json"
    )
    assert same.status_code == 400


def test_2d_boxes_are_drawn_on_the_endoscopy_image_in_pixels(api, small_case, people):
    url = reverse("api-image-boxes", args=[small_case.endoscopy_image.sha256])
    as_user(api, people["reviewer"])
    response = api.post(url, {"label": "lesion", "box": [10, 5, 60, 40]}, format="json")
    assert response.status_code == 201
    assert (response.json()["voxel"], response.json()["mm"]) == ([10, 5, 60, 40], None)
    assert (
        api.post(url, {"label": "lesion", "box": [10, 5, 97, 40]}, format="json").status_code == 400
    )
    assert [b["label"] for b in api.get(url).json()] == ["lesion"]
    assert Box.objects.filter(image=small_case.endoscopy_image).count() == 1


def test_a_reviewer_cannot_accept_reject_or_move_a_box_that_is_not_their_proposal(
    api, small_case, people
):
    box = Box.objects.get(volume__case=small_case)
    as_user(api, people["reviewer"])
    for state in ("accepted", "rejected"):
        response = api.post(
            reverse("api-box-review", args=[box.pk]), {"version": 1, "state": state}, format="json"
        )
        assert response.status_code == 403 and response.json()["code"] == "not_allowed"
    moved = api.patch(
        reverse("api-box", args=[box.pk]),
        {"version": 1, "voxel": [1, 1, 1, 9, 9, 3]},
        format="json",
    )
    assert moved.status_code == 403 and moved.json()["code"] == "not_your_box"
    box.refresh_from_db()
    assert (box.state, box.version, box.revisions.count()) == ("proposed", 1, 1)


def test_a_reviewer_changes_their_own_proposal_but_not_another_reviewers(api, small_case, people):
    url = reverse("api-volume-boxes", args=[volume_of(small_case).pk])
    drawn = as_user(api, people["reviewer"]).post(
        url, {"label": "tumor", "voxel": [4, 4, 2, 20, 20, 5]}, format="json"
    )
    assert drawn.status_code == 201 and drawn.json()["state"] == "proposed"
    box_url = reverse("api-box", args=[drawn.json()["id"]])
    mine = api.patch(box_url, {"version": 1, "label": "lymph_node"}, format="json")
    assert mine.status_code == 200
    theirs = as_user(api, people["reviewer2"]).patch(
        box_url, {"version": 2, "label": "stomach"}, format="json"
    )
    # The other reviewer of the case is blinded to this proposal: for her it does not exist.
    assert theirs.status_code == 404
    box = Box.objects.get(pk=drawn.json()["id"])
    assert (box.label, box.author) == ("lymph_node", people["reviewer"])
    assert [(r.reason, r.author) for r in box.revisions.all()] == [
        ("drawn", people["reviewer"]),
        ("edited", people["reviewer"]),
    ]


def test_only_a_cases_reviewers_draw_boxes_on_it(api, small_case, people):
    from annotations.models import Assignment
    from tests.factories import make_item, make_user

    stranger = make_user("frank", "reviewer")
    url = reverse("api-volume-boxes", args=[volume_of(small_case).pk])
    payload = {"label": "tumor", "voxel": [4, 4, 2, 20, 20, 5]}
    # Outside their scope the case does not exist for them (selectors.visibility).
    assert as_user(api, stranger).post(url, payload, format="json").status_code == 404
    adjudicator = as_user(api, people["adjudicator"]).post(url, payload, format="json")
    assert adjudicator.status_code == 404
    # In scope (an item of the benchmark that is not the case's; a dispute there), refused.
    other = make_item(small_case.benchmark, index=99)
    Assignment.objects.create(item=other, reviewer=stranger, slot=1)
    make_item(small_case.benchmark, index=100, status="disputed")
    refused = as_user(api, stranger).post(url, payload, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "not_assigned"
    image_url = reverse("api-image-boxes", args=[small_case.endoscopy_image.sha256])
    refused_2d = api.post(image_url, {"label": "lesion", "box": [1, 1, 9, 9]}, format="json")
    assert refused_2d.status_code == 403
    adjudicator = as_user(api, people["adjudicator"]).post(url, payload, format="json")
    assert adjudicator.status_code == 403
    assert as_user(api, people["curator"]).post(url, payload, format="json").status_code == 201
    assert Box.objects.filter(author__in=[stranger, people["adjudicator"]]).count() == 0


def _dispute_the_case(case, people, *, kind: str = "box"):
    """Dispute the case's first item of `kind` (its localization item by default: a box is
    judged through its own item)."""
    from annotations.models import Item
    from annotations.services.review import review_submit

    item = Item.objects.filter(case=case, kind=kind).order_by("pk").first()
    review_submit(item=item, reviewer=people["reviewer"], verdict="accept", version=item.version)
    review_submit(
        item=item, reviewer=people["reviewer2"], verdict="reject", reason="ambiguous",
        version=item.version,
    )  # fmt: skip
    item.refresh_from_db()
    assert item.status == "disputed"
    return item


def test_an_adjudicator_settles_boxes_only_while_settling_a_dispute_of_the_case(
    api, small_case, people
):
    from tests.factories import make_item

    box = Box.objects.get(volume__case=small_case)
    url = reverse("api-box-review", args=[box.pk])
    as_user(api, people["adjudicator"])
    before = api.post(url, {"version": 1, "state": "rejected"}, format="json")
    assert before.status_code == 404  # no dispute in the benchmark: not in his scope
    make_item(small_case.benchmark, index=100, status="disputed")  # a dispute, not the case's
    before = api.post(url, {"version": 1, "state": "rejected"}, format="json")
    assert before.status_code == 403  # no dispute on this case: nothing to settle
    _dispute_the_case(small_case, people, kind="mcq")
    before = api.post(url, {"version": 1, "state": "rejected"}, format="json")
    assert before.status_code == 403  # a dispute of another item of the case: not the box's
    item = _dispute_the_case(small_case, people)
    response = api.post(
        url, {"version": 1, "state": "rejected", "note": "not a tumor"}, format="json"
    )
    assert response.status_code == 200
    revision = box.revisions.last()
    assert (revision.state, revision.author, revision.reason) == (
        "rejected",
        people["adjudicator"],
        "rejected",
    )
    assert revision.note == f"Adjudication of item #{item.source_index}: not a tumor"
    assert api.post(url, {"version": 2, "state": "maybe"}, format="json").status_code == 400


def test_a_reviewer_of_the_dispute_who_adjudicates_cannot_settle_its_boxes(api, small_case, people):
    from annotations.services.users import user_ensure

    user_ensure(username=people["reviewer"].username, password="x", roles=("adjudicator",))
    _dispute_the_case(small_case, people)
    box = Box.objects.get(volume__case=small_case)
    response = as_user(api, people["reviewer"]).post(
        reverse("api-box-review", args=[box.pk]), {"version": 1, "state": "rejected"}, format="json"
    )
    assert response.status_code == 403
    box.refresh_from_db()
    assert box.state == "proposed"


def test_a_curators_correction_of_a_box_is_recorded_with_its_reason(api, small_case, people):
    box = Box.objects.get(volume__case=small_case)
    response = as_user(api, people["curator"]).post(
        reverse("api-box-review", args=[box.pk]),
        {"version": 1, "state": "accepted", "note": "checked on the venous phase"},
        format="json",
    )
    assert response.status_code == 200
    revision = box.revisions.last()
    assert (revision.author, revision.state) == (people["curator"], "accepted")
    assert revision.note == "Curator's correction: checked on the venous phase"


def test_a_curator_reviewing_the_case_proposes_boxes_like_any_reviewer(
    api, small_case, people, tmp_path
):
    from annotations.models import Assignment, Item
    from annotations.services.users import user_ensure

    curator = people["curator"]
    user_ensure(username=curator.username, password="x", roles=("reviewer",))
    item = Item.objects.filter(case=small_case).order_by("pk").first()
    Assignment.objects.filter(item=item, reviewer=people["reviewer2"]).update(reviewer=curator)
    box = Box.objects.get(volume__case=small_case)
    as_user(api, curator)
    judged = api.post(
        reverse("api-box-review", args=[box.pk]), {"version": 1, "state": "rejected"}, format="json"
    )
    assert judged.status_code == 403
    moved = api.patch(
        reverse("api-box", args=[box.pk]),
        {"version": 1, "voxel": [1, 1, 1, 9, 9, 3]},
        format="json",
    )
    assert moved.status_code == 403
    drawn = api.post(
        reverse("api-volume-boxes", args=[volume_of(small_case).pk]),
        {"label": "tumor", "voxel": [4, 4, 2, 20, 20, 5]},
        format="json",
    )
    assert drawn.status_code == 201 and drawn.json()["state"] == "proposed"
    box.refresh_from_db()
    assert (box.state, box.version) == ("proposed", 1)
