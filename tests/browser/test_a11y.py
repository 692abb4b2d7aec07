"""axe-core (vendored, static/vendor/axe) on every main page, in English and in Chinese: no
serious or critical violation; every form field has a label, not just a placeholder; the skip link
is the first stop of the keyboard and shows where focus is."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.main_pages import LANGUAGES, main_pages, one_page, visit
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(settings.BASE_DIR) / "static" / "vendor" / "axe" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 800}

RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations
    .filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => `${v.id} (${v.impact}): ` + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(" | "));
}"""

# A placeholder disappears as one types and is no label (axe accepts it; we do not).
UNLABELLED = """() => [...document.querySelectorAll("input, select, textarea")]
  .filter(e => !["hidden", "submit", "button", "reset", "image"].includes(e.type))
  .filter(e => !e.closest("[hidden]") && !e.labels.length)
  .filter(e => !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
  .map(e => e.outerHTML.slice(0, 120))"""


@pytest.fixture
def pages(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RELEASES_ROOT = tmp_path / "releases"
    return main_pages(tmp_path)


@pytest.fixture
def few_pages():
    make_personas()
    return {"login": ("", reverse("login")), "runs": ("dave", reverse("runs"))}


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_main_page_passes_axe_and_labels_every_field(browser, live_server, pages, language):
    violations, unlabelled = {}, {}
    for name, page in visit(browser, live_server, pages, language=language, viewport=DESKTOP):
        page.add_script_tag(path=str(AXE))
        if found := page.evaluate(RUN_AXE):
            violations[name] = found
            screenshot(page, f"a11y_{language}_{name.replace(' ', '_')}")
        if fields := page.evaluate(UNLABELLED):
            unlabelled[name] = fields
    assert len(pages) >= 30
    assert violations == {}, "\n".join(f"{k}: {v}" for k, v in violations.items())
    assert unlabelled == {}


def test_axe_finds_what_it_should(browser, live_server, few_pages):
    """The check can fail: a grey-on-white line and an unlabelled field are caught."""
    with one_page(browser, live_server, few_pages["login"], viewport=DESKTOP) as page:
        page.evaluate("""() => {
          const p = document.createElement("p");
          p.textContent = "faint"; p.style.color = "#bbbbbb";
          document.querySelector("main").append(p, document.createElement("textarea"));
        }""")
        page.add_script_tag(path=str(AXE))
        assert any(v.startswith("color-contrast") for v in page.evaluate(RUN_AXE))
        assert page.evaluate(UNLABELLED) == ["<textarea></textarea>"]


def test_the_skip_link_comes_first_and_takes_the_keyboard_to_the_content(
    browser, live_server, few_pages
):
    with one_page(browser, live_server, few_pages["runs"], viewport=DESKTOP) as page:
        page.keyboard.press("Tab")
        skip = page.locator(".skip-link")
        expect(skip).to_be_focused()
        assert skip.is_visible() and skip.bounding_box()["y"] >= 0
        # The focus is shown: an outline wide enough to see.
        assert skip.evaluate("e => parseFloat(getComputedStyle(e).outlineWidth)") >= 2
        screenshot(page, "a11y_skip_link")
        page.keyboard.press("Enter")
        expect(page.locator("#main")).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.locator("main :focus")).to_have_count(1)


def test_every_page_has_a_favicon_served_from_our_static_files(browser, live_server, few_pages):
    with one_page(browser, live_server, few_pages["login"], viewport=DESKTOP) as page:
        icons = page.eval_on_selector_all("link[rel~=icon]", "links => links.map(l => l.href)")
        assert icons and all(href.startswith(f"{live_server.url}/static/") for href in icons)
        for href in icons:
            assert page.request.get(href).status == 200
