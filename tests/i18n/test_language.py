"""The header's language switcher remembers the choice per user; login brings it back."""

from __future__ import annotations

import json
import re

from django.conf import settings
from django.test import TestCase, override_settings
from django.urls import reverse

from annotations.models import UserProfile
from tests.factories import PASSWORD, make_personas

COOKIE = settings.LANGUAGE_COOKIE_NAME


@override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
class LanguageSwitchTest(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.url = reverse("set_language")

    def switch(self, language: str, next_url: str = "/"):
        return self.client.post(self.url, {"language": language, "next": next_url})

    def test_it_switches_to_chinese_and_remembers_it_for_the_user(self):
        self.client.force_login(self.people["reviewer"])
        response = self.switch("zh-hans", "/review/")
        self.assertRedirects(response, "/review/", fetch_redirect_response=False)
        self.assertEqual(response.cookies[COOKIE].value, "zh-hans")
        self.assertEqual(UserProfile.objects.get(user=self.people["reviewer"]).language, "zh-hans")
        page = self.client.get(reverse("dashboard"))
        self.assertContains(page, '<html lang="zh-hans">')
        self.assertContains(page, "退出登录")

    def test_switching_back_to_english_updates_the_profile(self):
        self.client.force_login(self.people["curator"])
        self.switch("zh-hans")
        self.switch("en")
        self.assertEqual(UserProfile.objects.get(user=self.people["curator"]).language, "en")
        self.assertContains(self.client.get(reverse("dashboard")), "Log out")

    def test_an_unknown_language_changes_nothing(self):
        self.client.force_login(self.people["reviewer"])
        self.switch("zh-hans")
        response = self.switch("xx")
        self.assertNotIn(COOKIE, response.cookies)
        self.assertEqual(UserProfile.objects.get(user=self.people["reviewer"]).language, "zh-hans")

    def test_get_is_not_allowed(self):
        self.client.force_login(self.people["reviewer"])
        self.assertEqual(self.client.get(self.url).status_code, 405)

    def test_anonymous_visitors_can_switch_on_the_login_page_without_a_profile(self):
        response = self.switch("zh-hans", reverse("login"))
        self.assertEqual(response.cookies[COOKIE].value, "zh-hans")
        self.assertFalse(UserProfile.objects.exists())
        login_page = self.client.get(reverse("login"))
        self.assertContains(login_page, "用户名")
        self.assertContains(login_page, f'action="{self.url}"')

    def test_a_user_without_a_role_may_choose_a_language_too(self):
        # Language is not a permission: the outsider sees the same switcher as everyone.
        self.client.force_login(self.people["outsider"])
        self.assertEqual(self.switch("zh-hans").status_code, 302)
        self.assertEqual(UserProfile.objects.get(user=self.people["outsider"]).language, "zh-hans")

    def test_the_switcher_is_in_the_header_in_both_languages(self):
        self.client.force_login(self.people["reviewer"])
        page = self.client.get(reverse("dashboard"))
        self.assertContains(page, 'name="language" value="zh-hans"')
        self.assertContains(page, "简体中文")
        self.assertContains(page, 'value="en"')


@override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
class LoginLanguageTest(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def log_in(self, username: str):
        return self.client.post(reverse("login"), {"username": username, "password": PASSWORD})

    def test_login_brings_back_the_remembered_language_on_a_new_browser(self):
        UserProfile.objects.create(user=self.people["reviewer"], language="zh-hans")
        response = self.log_in("alice")
        self.assertEqual(response.status_code, 302)
        self.assertEqual(response.cookies[COOKIE].value, "zh-hans")
        self.assertContains(self.client.get(reverse("dashboard")), '<html lang="zh-hans">')

    def test_the_remembered_language_wins_over_the_previous_users_cookie(self):
        UserProfile.objects.create(user=self.people["curator"], language="en")
        self.client.cookies[COOKIE] = "zh-hans"
        response = self.log_in("dave")
        self.assertEqual(response.cookies[COOKIE].value, "en")

    def test_a_language_chosen_on_the_login_page_becomes_the_users_choice(self):
        self.client.cookies[COOKIE] = "zh-hans"
        response = self.log_in("bob")
        self.assertEqual(response.status_code, 302)
        self.assertEqual(UserProfile.objects.get(user=self.people["reviewer2"]).language, "zh-hans")

    def test_a_failed_login_stores_nothing(self):
        self.client.cookies[COOKIE] = "zh-hans"
        response = self.client.post(reverse("login"), {"username": "bob", "password": "wrong"})
        self.assertEqual(response.status_code, 200)
        self.assertFalse(UserProfile.objects.exists())

    def test_without_any_choice_the_browser_language_applies(self):
        self.log_in("carol")
        self.assertFalse(UserProfile.objects.exists())
        page = self.client.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
        self.assertContains(page, '<html lang="zh-hans">')


class JavaScriptCatalogTest(TestCase):
    def test_the_catalog_is_served_to_anonymous_visitors_in_their_language(self):
        self.client.cookies[COOKIE] = "zh-hans"
        response = self.client.get(reverse("javascript-catalog"))
        self.assertEqual(response.status_code, 200)
        catalog = json.loads(
            re.search(r"newcatalog = (\{.*?\});", response.content.decode(), re.S).group(1)
        )
        self.assertEqual(catalog["W %(width)s / L %(level)s"], "窗宽 %(width)s / 窗位 %(level)s")

    def test_every_page_loads_the_catalog_before_its_modules(self):
        html = self.client.get(reverse("login")).content.decode()
        self.assertLess(html.index(reverse("javascript-catalog")), html.index("</head>"))
