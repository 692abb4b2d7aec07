"""A pool's hub in Chromium: a curator draws a benchmark by keyboard-free clicks on the form,
lands on its strata, and the pages fit 1024 px (screenshots kept to look at)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotations.models import Item
from tests.browser.conftest import screenshot
from tests.factories import make_user
from tests.pools.world import make_pool

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_curator_draws_a_benchmark_from_the_pool_hub(page, login, live_server):
    make_pool(images_per_stratum=6, questions_per_image=3)
    make_user("cur", "curator")
    login("cur")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.goto(f"{live_server.url}/benchmarks/endo-pool/")
    page.click("[data-pool] summary")
    page.fill("#id_draw-name", "endo-drawn")
    page.fill("#id_draw-seed", "7")
    page.check("input[name=draw-fields][value=scene]")
    page.check("input[name=draw-fields][value=task]")
    page.fill("#id_draw-per_stratum", "8")
    screenshot(page, "pool-hub-draw-form")
    page.click("[data-draw-submit]")
    expect(page.locator("[data-draw-strata]")).to_be_visible()
    expect(page.locator("[data-stratum='colonoscopy / landmark'] td").nth(1)).to_have_text("8")
    assert Item.objects.filter(benchmark__name="endo-drawn").count() == 48
    page.click("[data-letters] summary")
    expect(page.locator("[data-letters] table")).to_be_visible()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1024
    screenshot(page, "pool-drawn-hub")
