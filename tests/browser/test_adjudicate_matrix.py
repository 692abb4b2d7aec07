"""Every adjudicator decision on its own page, for every item kind, by clicking and typing:
take A, take B, write a new version, reject the item."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import Adjudication, Assignment, Item, Review
from tests.browser.decide import adjudicate, left_item, open_adjudication, served
from tests.browser.review_worlds import EDITABLE, KINDS, PAIR, disputed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A version of the adjudicator's own, differing from both reviewers'.
NEW = {
    "mcq": "B",
    PAIR: "C",
    "label": "T4aN2M0",
    "label_n": "N2",
    "open": "Wall thickening with two perigastric nodes. No ascites.",
    "box3d": [11, 13, 2, 21, 31, 6],
    "box2d": [11, 11, 41, 31],
}


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


def settled_value(kind: str, item: Item):
    if kind in ("mcq", PAIR) or kind.startswith("label"):
        return item.answer
    if kind == "open":
        return item.reference
    return (item.target or {}).get("voxel") or (item.target or {}).get("box")


def review_in_slot(item: Item, slot: int) -> Review:
    reviewer = Assignment.objects.get(item=item, slot=slot).reviewer
    return Review.objects.get(item=item, reviewer=reviewer)


CASES = [(kind, action) for kind in (*KINDS, PAIR) for action in ("take_a", "take_b", "reject")] + [
    (kind, "new") for kind in (*EDITABLE, PAIR)
]


@pytest.mark.parametrize(("kind", "action"), CASES)
def test_an_adjudicator_settles_on_the_page(page, live_server, login, tmp_path, kind, action):
    people, item = disputed(kind, tmp_path)
    before = settled_value(kind, item)
    login(people["adjudicator"].username)
    open_adjudication(page, live_server, item)
    adjudicate(page, kind, action, value=NEW.get(kind))
    left_item(page, "[data-adjudicate-work]", item)

    adjudication = Adjudication.objects.get(item=item)
    fresh = Item.objects.get(pk=item.pk)
    if action == "reject":
        assert (adjudication.rejected, fresh.status) == (True, "rejected")
        return
    assert adjudication.choice == {"take_a": "a", "take_b": "b", "new": "new"}[action]
    if action == "new":
        assert settled_value(kind, fresh) == NEW[kind]
        return
    taken = review_in_slot(item, 1 if action == "take_a" else 2)
    if taken.verdict == "reject":
        assert fresh.status == "rejected"
        return
    assert fresh.status == "adjudicated"
    if taken.verdict == "edit":
        assert settled_value(kind, fresh) != before
        assert settled_value(kind, fresh) == settled_value(kind, _applied(kind, taken))
    else:
        assert settled_value(kind, fresh) == before


def _applied(kind: str, review: Review) -> Item:
    content = review.content or {}
    return Item(
        answer=content.get("answer", ""),
        reference=content.get("reference", ""),
        target=content.get("target"),
    )


@pytest.mark.parametrize("kind", ["mcq", "label"])
def test_a_take_by_key_asks_for_the_same_key_again(page, live_server, login, tmp_path, kind):
    """A or B (Shift+A, Shift+B beside a CT) arms the take; only the same key again settles."""
    people, item = disputed(kind, tmp_path)
    shift = "Shift+" if kind == "label" else ""
    login(people["adjudicator"].username)
    open_adjudication(page, live_server, item)
    form = page.locator("[data-adjudicate-form]")

    page.keyboard.press(f"{shift}KeyA")
    expect(form).to_have_attribute("data-armed", "a")
    expect(page.locator("[data-take-for=a]")).to_be_visible()
    page.keyboard.press("Escape")  # lets go
    expect(page.locator("[data-take-confirm]")).to_be_hidden()
    page.keyboard.press(f"{shift}KeyA")
    page.keyboard.press(f"{shift}KeyB")  # another key: now B is asked for, A let go
    expect(form).to_have_attribute("data-armed", "b")
    expect(page.locator("[data-take-for=a]")).to_be_hidden()
    served(page)
    assert not Adjudication.objects.filter(item=item).exists()

    page.keyboard.press(f"{shift}KeyB")
    left_item(page, "[data-adjudicate-work]", item)
    assert Adjudication.objects.get(item=item).choice == "b"
