from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.factories import make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_curator_logs_in_and_sees_the_dashboard(page, live_server, login):
    people = make_personas()
    benchmark = make_benchmark("endo-small", family="endobench")
    make_item(benchmark, index=1)
    make_item(benchmark, index=2, status="agreed")

    page.goto(live_server.url + "/")
    assert "/login/" in page.url  # anonymous users only see the login page

    login(people["curator"].username)
    assert page.locator("h1").first.inner_text() == "Benchmarks"
    row = page.locator("table.benchmarks tbody tr", has_text="endo-small")
    assert row.locator("td.num").nth(0).inner_text() == "2"
    assert row.locator("td.num").nth(1).inner_text() == "1"
    assert "EndoBench" in row.inner_text()
    screenshot(page, "dashboard")


def test_a_wrong_password_keeps_the_user_out(page, live_server, login):
    make_personas()
    login("dave", password="not-the-password")
    assert "/login/" in page.url
    assert page.locator(".error").is_visible()
