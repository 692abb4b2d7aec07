"""/api/docs/ (Swagger UI) and /api/redoc/ render from our own static files, with no internet."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.browser.conftest import screenshot
from tests.factories import make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def offline(page, live_server) -> list[str]:
    """Every request that would leave the live server (a CDN, web fonts): a hospital network
    has none."""
    here = urlparse(live_server.url).netloc
    outside: list[str] = []

    def seen(request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("http", "https") and url.netloc != here:
            outside.append(request.url)

    page.on("request", seen)
    return outside


def test_swagger_ui_renders_offline_with_the_new_endpoints(page, live_server, login):
    make_personas()
    page.set_default_timeout(60_000)  # the first page of a session starts Chromium
    outside = offline(page, live_server)
    login("dave")
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    for path in ("/api/benchmarks/{name}/items/", "/api/imports/", "/api/jobs/{id}/"):
        assert any(path in text.replace("\u200b", "") for text in paths), path
    screenshot(page, "api_docs_offline")
    assert outside == []


def test_redoc_renders_offline(page, live_server, login):
    make_personas()
    page.set_default_timeout(60_000)
    outside = offline(page, live_server)
    login("dave")
    page.goto(f"{live_server.url}/api/redoc/")
    page.wait_for_selector("text=/api/benchmarks/{name}/cases/", timeout=30_000)
    screenshot(page, "api_redoc_offline")
    # Redoc's footer always asks for Redocly's logo (no option turns it off); our page's CSP
    # refuses it and Redoc hides a logo that fails. Nothing else may leave: no script, style
    # or font.
    assert [url for url in outside if url != REDOCLY_LOGO] == []
