"""A Gastric-X dispute beside its case: at 1024×768 the reviews A and B and the decision (take A,
take B, write a new version, reject) are in view with the CT beside them, for a label and a 3D
box; "Enlarge the CT" gives the case the whole width and back. Screenshot for docs/."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from annotations.models import ItemStatus
from tests.browser.conftest import docs_picture
from tests.browser.decide import fill_correction, left_item, open_adjudication
from tests.browser.review_worlds import CORRECTED, disputed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FORM = "[data-adjudicate-form]"
DECISION = (
    ".adj-side .adj-a",
    ".adj-side .adj-b",
    f"{FORM} .verdicts [data-choice=a]",
    f"{FORM} .verdicts [data-choice=b]",
    f"{FORM} .verdicts [data-mode-set=edit]",
    f"{FORM} .verdicts [data-mode-set=reject]",
    ".ct-viewport[data-phase=venous] .ct-stage",
)
# The field the adjudicator types the new version into, per kind.
NEW_VERSION_FIELD = {"label": "select[name=label]", "box3d": "input[name=z1]"}


@pytest.fixture(autouse=True)
def _media(settings, tmp_path_factory):
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    yield
    shutil.rmtree(settings.MEDIA_ROOT, ignore_errors=True)


def open_case_dispute(page, live_server, login, tmp_path, kind):
    people, item = disputed(kind, tmp_path)
    page.set_viewport_size({"width": 1024, "height": 768})
    page.set_default_timeout(60_000)  # four phases of voxels to a loaded machine
    login(people["adjudicator"].username)
    open_adjudication(page, live_server, item)
    expect(page.locator("[data-case-panel] #ct-viewer")).to_have_attribute("data-loaded", "true")
    return people, item


@pytest.mark.parametrize("kind", ["label", "box3d"])
def test_at_1024_reviews_a_and_b_and_the_decision_are_in_view_beside_the_ct(
    page, live_server, login, tmp_path, kind
):
    _people, item = open_case_dispute(page, live_server, login, tmp_path, kind)
    for selector in DECISION:
        expect(page.locator(selector).first).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024  # no sideways scroll
    if kind == "label":
        page.screenshot(path=str(docs_picture("gastric-adjudicate-1024.png")))
    # Writing a new version: its field and its save button come into view in the side.
    page.click(f"{FORM} .verdicts [data-mode-set=edit]")
    expect(page.locator(f"{FORM} {NEW_VERSION_FIELD[kind]}")).to_be_in_viewport()
    expect(page.locator(f"{FORM} button.edit-only[data-choice=new]")).to_be_in_viewport()
    fill_correction(page, FORM, kind, CORRECTED[kind][1])
    page.click(f"{FORM} button.edit-only[data-choice=new]")
    left_item(page, "[data-adjudicate-work]", item)
    item.refresh_from_db()
    assert item.status == ItemStatus.ADJUDICATED


def test_the_ct_is_enlarged_and_back_beside_the_dispute(page, live_server, login, tmp_path):
    open_case_dispute(page, live_server, login, tmp_path, "label")
    page.click("[data-case-wide]")
    expect(page.locator(".review-grid")).to_have_class("review-grid with-case adj-case case-wide")
    expect(page.locator("[data-case-wide]")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".ct-viewport[data-phase=venous] .ct-stage")).to_be_in_viewport()
    page.click("[data-case-wide]")
    expect(page.locator(".review-grid")).to_have_class("review-grid with-case adj-case")
    expect(page.locator(f"{FORM} .verdicts [data-choice=a]")).to_be_in_viewport()
    expect(page.locator(".adj-side .adj-b")).to_be_in_viewport()
