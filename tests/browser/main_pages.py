"""Every main page of the app with something on it, opened in Chromium as its user, in English and
in Chinese (for the accessibility and narrow-screen tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotations.selectors.cases import memmaps
from tests.i18n.world import build_world

LANGUAGES = ("en", "zh-hans")


def main_pages(tmp_path) -> dict[str, tuple[str, str]]:
    """{name: (username, url)}: the i18n test's world, and the pages it has no need of."""
    memmaps.clear()
    pages = build_world(tmp_path)
    pages |= {
        "jobs": ("dave", reverse("jobs")),
        "benchmark settings": ("dave", reverse("benchmark-settings", args=["rv"])),
        "not found": ("alice", "/no-such-page/"),
        "refused": ("alice", reverse("runs")),
    }
    return pages


def _session_cookie(username: str) -> str:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def visit(browser, live_server, pages, *, language: str, viewport: dict) -> Iterator:
    """Yield (name, page) with each page loaded, one browser context per user."""
    by_user: dict[str, list[tuple[str, str]]] = {}
    for name, (username, url) in pages.items():
        by_user.setdefault(username, []).append((name, url))
    for username, named in by_user.items():
        # axe is injected as an inline script, which the Content-Security-Policy refuses: these
        # checks bypass it (tests/browser/test_csp.py opens the same pages under the policy).
        context = browser.new_context(viewport=viewport, locale="en-US", bypass_csp=True)
        cookies = [{"name": settings.LANGUAGE_COOKIE_NAME, "value": language}]
        if username:
            cookies.append(
                {"name": settings.SESSION_COOKIE_NAME, "value": _session_cookie(username)}
            )
        context.add_cookies([{**cookie, "url": live_server.url} for cookie in cookies])
        page = context.new_page()
        page.set_default_timeout(15_000)
        try:
            for name, url in named:
                page.goto(f"{live_server.url}{url}")
                page.wait_for_load_state("networkidle")
                yield name, page
        finally:
            context.close()


@contextmanager
def one_page(browser, live_server, user_url: tuple[str, str], *, language: str = "en", viewport):
    """One page loaded as its user, open for the length of the with block."""
    pages = visit(browser, live_server, {"page": user_url}, language=language, viewport=viewport)
    try:
        yield next(pages)[1]
    finally:
        pages.close()
