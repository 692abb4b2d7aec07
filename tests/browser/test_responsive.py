"""Every main page on a tablet (768 px) and a phone (375 px): the page never scrolls sideways; a
wide table scrolls inside its own box."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.browser.conftest import screenshot
from tests.browser.main_pages import main_pages, visit
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDER_THAN_THE_WINDOW = """() => {
  const width = document.documentElement.clientWidth;
  const over = document.documentElement.scrollWidth - width;
  if (over <= 0) return null;
  // What sticks out, for the failure message.
  const culprits = [...document.querySelectorAll("main *, header *")]
    .filter(e => e.getBoundingClientRect().right > width + 1)
    .filter(e => !e.parentElement || e.parentElement.getBoundingClientRect().right <= width + 1)
    .slice(0, 4).map(e => e.tagName.toLowerCase() + (e.className ? "." + String(e.className).split(" ")[0] : ""));
  return `${over}px too wide: ${culprits.join(", ")}`;
}"""


@pytest.fixture
def pages(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RELEASES_ROOT = tmp_path / "releases"
    return main_pages(tmp_path)


@pytest.mark.parametrize(
    ("width", "language"), [(768, "en"), (768, "zh-hans"), (375, "en")], ids=str
)
def test_no_main_page_scrolls_sideways(browser, live_server, pages, width, language):
    viewport = {"width": width, "height": 900}
    too_wide = {}
    for name, page in visit(browser, live_server, pages, language=language, viewport=viewport):
        if problem := page.evaluate(WIDER_THAN_THE_WINDOW):
            too_wide[name] = problem
        screenshot(page, f"responsive_{width}_{language}_{name.replace(' ', '_')}")
    assert len(pages) >= 30
    assert too_wide == {}, "\n".join(f"{k}: {v}" for k, v in too_wide.items())


def test_the_check_sees_a_page_that_is_too_wide(browser, live_server):
    make_personas()
    viewport = {"width": 768, "height": 900}
    runs = {"runs": ("dave", reverse("runs"))}
    for _name, page in visit(browser, live_server, runs, language="en", viewport=viewport):
        page.evaluate(
            "document.querySelector('main').append(Object.assign(document.createElement('div'), {style: 'width: 1200px; height: 4px'}))"
        )
        assert "too wide" in page.evaluate(WIDER_THAN_THE_WINDOW)
