"""Every main page works under the Content-Security-Policy (issue 29): opened in Chromium with
the policy enforced (no bypass), no page reports a violation: no inline script, handler or style
element, nothing from elsewhere."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.browser.main_pages import _session_cookie, main_pages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Recorded by the browser before any of the page's own scripts run (an init script is not
# subject to the page's policy).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def test_no_main_page_violates_the_content_security_policy(browser, live_server, tmp_path):
    pages = main_pages(tmp_path)
    pages["api docs"] = ("dave", "/api/docs/")
    pages["api redoc"] = ("dave", "/api/redoc/")
    violations: list[str] = []
    for name, (username, url) in pages.items():
        context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        context.add_init_script(RECORD_VIOLATIONS)
        if username:
            cookie = {"name": settings.SESSION_COOKIE_NAME, "value": _session_cookie(username)}
            context.add_cookies([{**cookie, "url": live_server.url}])
        page = context.new_page()
        try:
            page.goto(f"{live_server.url}{url}", timeout=60_000)
            page.wait_for_load_state("networkidle")
            if name == "api docs":
                page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
            if name == "api redoc":
                page.wait_for_selector("text=/api/benchmarks/{name}/cases/", timeout=30_000)
            found = page.evaluate("() => window.__cspViolations")
            # Redoc's footer always asks for Redocly's logo from its CDN: refused, as it must be.
            violations += [f"{name}: {v}" for v in found if "cdn.redoc.ly" not in v]
        finally:
            context.close()
    assert violations == []
