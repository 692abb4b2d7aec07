"""The 403, 404 and 500 pages: styled like the app, with a way back, and a 403 logged in one line."""

from __future__ import annotations

import logging
import sys

import pytest
from django.db import connection
from django.test import Client, RequestFactory, SimpleTestCase, TestCase, override_settings
from django.urls import include, path, reverse
from django.views.defaults import server_error

from annotations.access import REVIEWER
from clinreview.log_filters import ClientErrorWithoutTraceback
from tests.factories import make_personas, make_user


def _broken_view(request):
    raise RuntimeError("a bug")


urlpatterns = [path("broken/", _broken_view), path("", include("clinreview.urls"))]


def _stream_handlers_reached(name: str) -> list[logging.Handler]:
    """The console handlers a record of logger NAME goes through (pytest's own aside)."""
    found: list[logging.Handler] = []
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        found += [
            handler
            for handler in logger.handlers
            if isinstance(handler, logging.StreamHandler)
            and not type(handler).__module__.startswith("_pytest")
        ]
        logger = logger.parent if logger.propagate else None
    return found


class ErrorPagesTest(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def test_a_refused_page_says_why_and_leads_back_with_the_top_bar(self):
        self.client.force_login(self.people["reviewer"])
        response = self.client.get(reverse("runs"))
        self.assertEqual(response.status_code, 403)
        self.assertContains(response, "Not shown to you", status_code=403)
        self.assertContains(response, 'class="topbar"', status_code=403)
        self.assertContains(response, f'href="{reverse("dashboard")}"', status_code=403)
        self.assertContains(response, 'class="skip-link"', status_code=403)

    def test_a_missing_page_is_the_apps_own_with_a_way_back(self):
        self.client.force_login(self.people["reviewer"])
        response = self.client.get("/no-such-page/")
        self.assertEqual(response.status_code, 404)
        self.assertTemplateUsed(response, "404.html")
        self.assertContains(response, "Page not found", status_code=404)
        self.assertContains(response, "Back to the benchmarks", status_code=404)
        self.assertContains(response, 'class="topbar"', status_code=404)

    def test_a_missing_page_speaks_chinese_to_a_chinese_reader(self):
        self.client.force_login(self.people["reviewer"])
        self.client.cookies["django_language"] = "zh-hans"
        response = self.client.get("/no-such-page/")
        self.assertContains(response, "页面不存在", status_code=404)

    def test_the_500_page_renders_without_request_context_or_database(self):
        request = RequestFactory().get("/anything/")
        with self.assertNumQueries(0):
            response = server_error(request)
        self.assertEqual(response.status_code, 500)
        body = response.content.decode()
        self.assertIn("Something went wrong", body)
        self.assertIn(f'href="{reverse("dashboard")}"', body)
        self.assertIn("css/app.css", body)

    @override_settings(ROOT_URLCONF=__name__)
    def test_a_crash_is_answered_with_the_500_page_and_logged_with_its_traceback(self):
        client = Client(raise_request_exception=False)
        client.force_login(self.people["reviewer"])
        with self.assertLogs("django.request", "ERROR") as logs:
            response = client.get("/broken/")
        self.assertEqual(response.status_code, 500)
        self.assertContains(response, "Something went wrong", status_code=500)
        self.assertIsNotNone(logs.records[0].exc_info)

    def test_the_500_page_survives_a_database_that_is_down(self):
        request = RequestFactory().get("/anything/")

        def refuse(execute, sql, params, many, context):
            raise AssertionError("the 500 page touched the database")

        with connection.execute_wrapper(refuse):
            response = server_error(request)
        self.assertEqual(response.status_code, 500)


@pytest.mark.django_db
def test_a_403_is_logged_once_as_a_line_without_a_traceback(client, caplog):
    client.force_login(make_user("rita", REVIEWER))
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("runs"))
    assert response.status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage() == "Forbidden (Permission denied): /runs/"
    assert record.exc_info is None and "Traceback" not in caplog.text
    # Django's own "django" logger printed every record a second time under DEBUG.
    assert len(_stream_handlers_reached("django.request")) == 1


class LogFilterTest(SimpleTestCase):
    def test_the_filter_keeps_the_traceback_of_a_server_error(self):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            exc_info = sys.exc_info()
        for status, kept in [(403, False), (400, False), (500, True)]:
            record = logging.LogRecord("django.request", logging.WARNING, "", 0, "x", (), exc_info)
            record.status_code = status
            self.assertTrue(ClientErrorWithoutTraceback().filter(record))
            self.assertEqual(record.exc_info is not None, kept, status)
