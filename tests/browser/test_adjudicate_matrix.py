"""Every adjudicator decision on its own page, for every item kind, by clicking and typing:
take A, take B, write a new version, reject the item."""

from __future__ import annotations

import shutil

import pytest

from annotations.models import Adjudication, Assignment, Item, Review
from tests.browser.decide import adjudicate, left_item, open_adjudication
from tests.browser.review_worlds import EDITABLE, KINDS, disputed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A version of the adjudicator's own, differing from both reviewers'.
NEW = {
    "mcq": "B",
    "label": "T4aN2M0",
    "label_n": "N2",
    "open": "Wall thickening with two perigastric nodes. No ascites.",
    "box3d": [11, 13, 2, 21, 31, 6],
}


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


def settled_value(kind: str, item: Item):
    if kind == "mcq" or kind.startswith("label"):
        return item.answer
    if kind == "open":
        return item.reference
    return (item.target or {}).get("voxel") or (item.target or {}).get("box")


def review_in_slot(item: Item, slot: int) -> Review:
    reviewer = Assignment.objects.get(item=item, slot=slot).reviewer
    return Review.objects.get(item=item, reviewer=reviewer)


CASES = [(kind, action) for kind in KINDS for action in ("take_a", "take_b", "reject")] + [
    (kind, "new") for kind in EDITABLE
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
