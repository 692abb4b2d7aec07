"""What a clinician does on the review and adjudication pages, step by step, for each kind."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.review_worlds import CORRECTED

# A decision on a Gastric-X page posts, redirects and loads the next case on a shared, loaded
# machine: wait for the condition as long as the page's own default (conftest), not 5 s.
expect.set_options(timeout=30_000)

BOX_3D = ("x0", "y0", "z0", "x1", "y1", "z1")
BOX_2D = ("x0", "y0", "x1", "y1")  # pixels on the item's image


def open_review(page, live_server, item) -> None:
    page.goto(f"{live_server.url}/review/items/{item.pk}/")
    expect(page.locator("html")).to_have_attribute("data-review-keys", "ready")
    expect(page.locator(f"[data-review-work][data-item='{item.pk}']")).to_be_visible()


def open_adjudication(page, live_server, item) -> None:
    page.goto(f"{live_server.url}/adjudication/items/{item.pk}/")
    expect(page.locator("html")).to_have_attribute("data-review-keys", "ready")
    expect(page.locator(f"[data-adjudicate-work][data-item='{item.pk}']")).to_be_visible()


def fill_correction(page, form: str, kind: str, value) -> None:
    """Type or pick the correction in the edit panel of `form`, as a clinician does."""
    scope = page.locator(form)
    if kind in ("mcq", "pair"):
        row = scope.locator("[data-opt-row]").nth("ABCDEF".index(value))
        row.locator("input[type=radio]").check()
    elif kind in ("label", "label_n"):
        scope.locator("select[name=label]").select_option(value)
    elif kind == "open":
        scope.locator("textarea[name=reference]").fill(value)
    elif kind in ("box3d", "box2d"):
        for name, number in zip(BOX_3D if kind == "box3d" else BOX_2D, value, strict=True):
            scope.locator(f"input[name={name}]").fill(str(number))
    else:
        raise AssertionError(f"no correction form for {kind}")


def left_item(page, work: str, item) -> None:
    """The decision went through: the page moved on (another item, the empty queue, or the
    list of disputes); a refusal would have stayed on the item with its message."""
    try:
        expect(page).not_to_have_url(re.compile(rf"/items/{item.pk}/(\?.*)?$"))
    except AssertionError:
        errors = page.locator(".work-error")
        raise AssertionError(errors.first.inner_text() if errors.count() else "no move") from None
    expect(page.locator(f"{work}[data-item='{item.pk}']")).to_have_count(0)
    served(page)


def served(page) -> None:
    """The live server has answered every request of the page (a CT page streams slices):
    only then does the test read the database, whose in-memory SQLite locks a table while the
    server's thread reads it ("database table is locked")."""
    page.wait_for_load_state("networkidle")


def review_decide(page, kind: str, action: str, *, value=None) -> None:
    """accept, edit (to `value`, else the kind's first correction) or reject."""
    form = "[data-review-form]"
    # A full page (a Gastric-X item, a changed verdict) decides only once review.js has run.
    page.wait_for_load_state("load")
    if action == "accept":
        page.click(f"{form} button[data-verdict=accept]")
    elif action == "edit":
        page.click(f"{form} .verdicts [data-mode-set=edit]")
        expect(page.locator(form)).to_have_attribute("data-mode", "edit")
        fill_correction(page, form, kind, value if value is not None else CORRECTED[kind][0])
        page.click(f"{form} button[data-verdict=edit]")
    elif action == "reject":
        page.click(f"{form} .verdicts [data-mode-set=reject]")
        page.locator(f"{form} .reason").first.click()
        page.click(f"{form} button[data-verdict=reject]")
    else:
        raise AssertionError(action)


def adjudicate(page, kind: str, action: str, *, value=None) -> None:
    """take_a, take_b, new (a version of its own) or reject, by clicking."""
    form = "[data-adjudicate-form]"
    page.wait_for_load_state("load")  # the buttons fill `choice` through review.js
    if action in ("take_a", "take_b"):
        page.click(f"{form} .verdicts [data-choice={action[-1]}]")
    elif action == "new":
        page.click(f"{form} .verdicts [data-mode-set=edit]")
        expect(page.locator(form)).to_have_attribute("data-mode", "edit")
        fill_correction(page, form, kind, value)
        page.click(f"{form} button.edit-only[data-choice=new]")
    elif action == "reject":
        page.click(f"{form} .verdicts [data-mode-set=reject]")
        page.click(f"{form} button[data-reject]")
    else:
        raise AssertionError(action)
