"""Every main page, rendered in Simplified Chinese, shows no untranslated interface English."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.test import TestCase, override_settings

from annotations.selectors.cases import memmaps
from tests.i18n.scan import content_strings, english_words
from tests.i18n.world import build_world

TMP = Path(tempfile.mkdtemp(prefix="clinreview-i18n-"))


@override_settings(
    MEDIA_ROOT=TMP / "media",
    RELEASES_ROOT=TMP / "releases",
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
)
class ChinesePagesTest(TestCase):
    maxDiff = None

    @classmethod
    def setUpTestData(cls):
        cls.pages = build_world(TMP)
        cls.content = content_strings()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        memmaps.clear()
        shutil.rmtree(TMP, ignore_errors=True)

    def get_in_chinese(self, username: str, url: str):
        self.client.logout()
        if username:
            self.client.login(username=username, password="correct-horse-battery")
        self.client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
        response = self.client.get(url, follow=True)
        self.assertEqual(response.status_code, 200, url)
        return response.content.decode()

    def test_every_main_page_is_in_chinese(self):
        leftovers = {}
        for name, (username, url) in self.pages.items():
            html = self.get_in_chinese(username, url)
            self.assertIn('lang="zh-hans"', html, name)
            words = english_words(html, self.content)
            if words:
                leftovers[name] = sorted(set(words))
        self.assertEqual(leftovers, {}, "English left on pages rendered in Chinese")

    def test_the_pages_really_are_translated(self):
        html = self.get_in_chinese(*self.pages["review"])
        for label in ("审阅", "接受", "修改", "拒绝", "跳到下一题", "退出登录"):
            self.assertIn(label, html)

    def test_benchmark_content_is_shown_as_imported(self):
        html = self.get_in_chinese(*self.pages["case"])
        self.assertIn("Wall thickening along the greater curvature.", html)
        self.assertIn("What is the clinical TNM stage?", html)
        self.assertIn("GX-I18N-0001", html)

    def test_the_scan_finds_an_unmarked_string(self):
        html = '<main><h1>审阅</h1><p title="Zoom level">Unmarked heading</p><kbd>Esc</kbd></main>'
        self.assertEqual(english_words(html, []), ["Zoom", "level", "Unmarked", "heading"])
