"""The review and adjudication forms validate what their pages send, for the item's kind: a
classification page sends its label (T3N1M0, N2), not a letter; a label outside the set is
refused with a message that names the set, not "Choose a verdict."."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.models import Adjudication, Review
from tests.browser.review_worlds import disputed, world
from tests.support.page_forms import PageForm

pytestmark = pytest.mark.django_db

REVIEW_FORM = "//form[@data-review-form]"
ADJUDICATE_FORM = "//form[@data-adjudicate-form]"


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")


@pytest.mark.parametrize(("kind", "label"), [("label", "T4aN2M0"), ("label_n", "N2")])
def test_a_label_is_accepted_and_corrected_through_the_rendered_form(client, tmp_path, kind, label):
    people, item = world(kind, tmp_path)
    url = reverse("review-item", args=[item.pk])
    client.force_login(people["reviewer"])
    form = PageForm(client.get(url), REVIEW_FORM).set("label", label)
    response = form.press("//button[@data-verdict='edit']").submit(client)
    assert response.status_code == 302, response.content.decode()[:300]
    review = Review.objects.get(item=item, reviewer=people["reviewer"])
    assert (review.verdict, review.content["answer"]) == ("edit", label)

    client.force_login(people["reviewer2"])
    response = (
        PageForm(client.get(url), REVIEW_FORM)
        .press("//button[@data-verdict='accept']")
        .submit(client)
    )
    assert response.status_code == 302
    assert Review.objects.get(item=item, reviewer=people["reviewer2"]).verdict == "accept"


def test_a_label_outside_the_set_is_refused_with_the_set_named(client, tmp_path):
    people, item = world("label", tmp_path)
    client.force_login(people["reviewer"])
    url = reverse("review-item", args=[item.pk])
    data = PageForm(client.get(url), REVIEW_FORM).press("//button[@data-verdict='edit']").data()
    data["label"] = ["T9N9M9"]  # not an option of the page's select: a tampered request
    response = client.post(url, data)
    assert response.status_code == 400
    assert "Choose a label of the set (T3N1M0, T4aN2M0)." in response.content.decode()
    assert not Review.objects.filter(item=item).exists()


@pytest.mark.parametrize("choice", ["a", "b"])
def test_a_label_dispute_is_settled_through_the_rendered_form(client, tmp_path, choice):
    people, item = disputed("label", tmp_path)
    client.force_login(people["adjudicator"])
    page = client.get(reverse("adjudicate", args=[item.pk]))
    response = PageForm(page, ADJUDICATE_FORM).press(f"//button[@data-choice='{choice}']")
    response = response.submit(client)
    assert response.status_code == 302, response.content.decode()[:300]
    assert Adjudication.objects.get(item=item).choice == choice


def test_the_api_takes_a_label_correction_and_a_new_label_version(tmp_path):
    """The API's decisions take every kind's content too (a label is not a letter)."""
    from rest_framework.test import APIClient

    people, item = world("label", tmp_path)
    api = APIClient()
    api.force_authenticate(people["reviewer"])
    body = {"verdict": "edit", "version": item.version, "content": {"answer": "T4aN2M0"}}
    response = api.post(f"/api/items/{item.pk}/reviews/", body, format="json")
    assert response.status_code == 201, response.content
    assert Review.objects.get(item=item).content["answer"] == "T4aN2M0"
    body["content"] = {"answer": "T9N9M9"}
    api.force_authenticate(people["reviewer2"])
    response = api.post(f"/api/items/{item.pk}/reviews/", body, format="json")
    assert response.status_code == 400
    assert "T9N9M9 is not in the label set" in response.json()["detail"]


def test_the_api_settles_a_label_dispute_with_a_new_version(tmp_path):
    from rest_framework.test import APIClient

    people, item = disputed("label", tmp_path)
    api = APIClient()
    api.force_authenticate(people["adjudicator"])
    body = {"choice": "new", "version": item.version, "content": {"answer": "T4aN2M0"}}
    response = api.post(f"/api/items/{item.pk}/adjudication/", body, format="json")
    assert response.status_code == 201, response.content
    item.refresh_from_db()
    assert (item.status, item.answer) == ("adjudicated", "T4aN2M0")
