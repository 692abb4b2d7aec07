"""Every reviewer decision on its own page, for every item kind, by clicking and typing as a
clinician does: accept, edit (correct), reject, change my verdict, withdraw it."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import RejectReason, Review, ReviewChange
from annotations.services.pair_review import pair_review_submit
from annotations.services.review import review_submit
from tests.browser.decide import left_item, open_review, review_decide, served
from tests.browser.review_worlds import CORRECTED, EDITABLE, KINDS, PAIR, world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRST_REASON = RejectReason.choices[0][0]


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


def proposed(kind: str, review: Review):
    content = review.content or {}
    if kind == "mcq" or kind.startswith("label"):
        return content["answer"]
    if kind == "open":
        return content["reference"]
    return content["target"]["box" if kind == "box2d" else "voxel"]


CASES = [(kind, action) for kind in KINDS for action in ("accept", "reject")] + [
    (kind, "edit") for kind in EDITABLE
]


@pytest.mark.parametrize(("kind", "action"), CASES)
def test_a_reviewer_decides_on_the_page(page, live_server, login, tmp_path, kind, action):
    people, item = world(kind, tmp_path)
    login(people["reviewer"].username)
    open_review(page, live_server, item)
    review_decide(page, kind, action)
    left_item(page, "[data-review-work]", item)

    review = Review.objects.get(item=item, reviewer=people["reviewer"])
    assert review.verdict == action
    assert review.item_version == item.version
    if action == "edit":
        assert proposed(kind, review) == CORRECTED[kind][0]
    if action == "reject":
        assert review.reason == FIRST_REASON


@pytest.mark.parametrize("kind", KINDS)
def test_a_reviewer_changes_a_verdict_on_the_page(page, live_server, login, tmp_path, kind):
    people, item = world(kind, tmp_path)
    alice = people["reviewer"]
    review_submit(item=item, reviewer=alice, verdict="accept", version=item.version)
    login(alice.username)
    open_review(page, live_server, item)
    page.click("[data-change-verdict]")
    expect(page.locator("[data-changing]")).to_be_visible()
    review_decide(page, kind, "edit" if kind in EDITABLE else "reject")
    expect(page.locator("[data-review-notice]")).to_contain_text("Your verdict is changed.")
    served(page)

    review = Review.objects.get(item=item, reviewer=alice)
    assert ReviewChange.objects.get(review=review).verdict == "accept"
    if kind in EDITABLE:
        assert (review.verdict, proposed(kind, review)) == ("edit", CORRECTED[kind][0])
    else:
        assert (review.verdict, review.reason) == ("reject", FIRST_REASON)


@pytest.mark.parametrize("kind", KINDS)
def test_a_reviewer_withdraws_a_verdict_on_the_page(page, live_server, login, tmp_path, kind):
    people, item = world(kind, tmp_path)
    alice = people["reviewer"]
    review_submit(item=item, reviewer=alice, verdict="accept", version=item.version)
    login(alice.username)
    open_review(page, live_server, item)
    page.click("[data-withdraw]")
    expect(page.locator("[data-review-notice]")).to_contain_text("Your verdict is withdrawn.")
    # The item is mine to decide again, on the same page.
    expect(page.locator("[data-review-form] button[data-verdict=accept]")).to_be_visible()
    served(page)
    assert not Review.objects.filter(item=item, reviewer=alice).exists()


def test_a_reviewer_withdraws_a_pair_judgement_on_the_pair_page(page, live_server, login, tmp_path):
    people, item = world(PAIR, tmp_path)
    alice = people["reviewer"]
    pair_review_submit(
        item=item,
        reviewer=alice,
        version=item.version,
        answerable=True,
        realism=4,
        severity_judgement="right",
    )
    login(alice.username)
    page.goto(f"{live_server.url}/pairs/{item.pk}/")
    page.click("[data-pair-withdraw] button[type=submit]")
    expect(page.locator("[data-pair-form]")).to_be_visible()
    expect(page.locator("[data-pair-withdraw]")).to_have_count(0)
    served(page)
    assert not Review.objects.filter(item=item, reviewer=alice).exists()
