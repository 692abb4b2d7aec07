"""Accounts: logins throttled per (user name, address) pair and per address, API tokens that expire and end at
logout, passwords of at least 12 characters."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from knox.models import AuthToken
from rest_framework.test import APIClient

from tests.factories import PASSWORD, make_personas


@override_settings(AXES_FAILURE_LIMIT=3, LOGIN_ADDRESS_FAILURE_LIMIT=5)
class LoginThrottleTests(TestCase):
    """Lockouts that cannot be turned against users (issue 29): per (user name, address) pair,
    per address only at a higher bound and only for existing names, the address the client's
    own (a forwarded-for header only from declared proxies)."""

    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def login(self, username: str, password: str, address: str = "10.0.0.1", **headers):
        return self.client.post(
            reverse("login"),
            {"username": username, "password": password},
            REMOTE_ADDR=address,
            **headers,
        )

    def test_too_many_failures_lock_the_user_name_at_that_address_only(self):
        for _attempt in range(2):
            self.assertEqual(self.login("alice", "wrong", "10.0.0.1").status_code, 200)
        # The third failure reaches the limit and is answered with the lockout already.
        self.assertEqual(self.login("alice", "wrong", "10.0.0.1").status_code, 429)
        locked = self.login("alice", PASSWORD, "10.0.0.1")
        self.assertContains(locked, "Too many failed logins", status_code=429)
        self.assertContains(locked, 'class="login-card"', status_code=429)  # the styled page
        self.assertNotIn("_auth_user_id", self.client.session)
        # Whoever guessed from 10.0.0.1 locked only that pair: alice at her desk logs in.
        self.assertEqual(self.login("alice", PASSWORD, "10.0.0.99").status_code, 302)
        self.client.logout()
        self.assertEqual(self.login("bob", PASSWORD, "10.0.0.1").status_code, 302)

    def test_many_failures_for_existing_names_from_one_address_lock_that_address(self):
        for name in ("alice", "alice", "bob", "bob", "dave"):
            self.login(name, "wrong", "10.0.0.7")
        self.assertEqual(self.login("carol", PASSWORD, "10.0.0.7").status_code, 429)
        self.assertEqual(self.login("carol", PASSWORD, "10.0.0.8").status_code, 302)

    def test_failures_for_unknown_names_lock_nobody_out(self):
        for number in range(10):
            self.login(f"nobody{number % 2}", "wrong", "10.0.0.5")
        self.assertEqual(self.login("alice", PASSWORD, "10.0.0.5").status_code, 302)

    @override_settings(TRUSTED_PROXY_COUNT=1)
    def test_ten_failures_for_an_unknown_name_do_not_lock_out_a_user_behind_the_proxy(self):
        proxy = "10.1.1.1"  # every request reaches the app from the TLS proxy
        for _attempt in range(10):
            self.login("nobody", "wrong", proxy, HTTP_X_FORWARDED_FOR="203.0.113.5")
        # The attacker's own pair is locked (the same answer whether the name exists or not).
        attacker = self.login("nobody", "wrong", proxy, HTTP_X_FORWARDED_FOR="203.0.113.5")
        self.assertEqual(attacker.status_code, 429)
        user = self.login("alice", PASSWORD, proxy, HTTP_X_FORWARDED_FOR="198.51.100.7")
        self.assertEqual(user.status_code, 302)
        # And guessing alice's password through the proxy locks only the guesser's address.
        self.client.logout()
        for _attempt in range(3):
            self.login("alice", "wrong", proxy, HTTP_X_FORWARDED_FOR="9.9.9.9, 203.0.113.5")
        self.assertEqual(
            self.login("alice", PASSWORD, proxy, HTTP_X_FORWARDED_FOR="203.0.113.5").status_code,
            429,
        )
        user = self.login("alice", PASSWORD, proxy, HTTP_X_FORWARDED_FOR="198.51.100.7")
        self.assertEqual(user.status_code, 302)

    def test_a_forwarded_for_header_is_not_trusted_by_default(self):
        for number in range(3):
            self.login("alice", "wrong", "10.0.0.2", HTTP_X_FORWARDED_FOR=f"192.0.2.{number}")
        # Counted under the connection's address, whatever the client claimed.
        spoofed = self.login("alice", PASSWORD, "10.0.0.2", HTTP_X_FORWARDED_FOR="192.0.2.77")
        self.assertEqual(spoofed.status_code, 429)

    def test_the_token_endpoint_counts_failures_too(self):
        api = APIClient(REMOTE_ADDR="10.0.0.3")
        for expected in (400, 400, 429):
            wrong = api.post("/api/token/", {"username": "alice", "password": "no"}, format="json")
            self.assertEqual(wrong.status_code, expected)
        locked = api.post("/api/token/", {"username": "alice", "password": PASSWORD}, format="json")
        self.assertEqual(locked.status_code, 429)
        self.assertEqual(locked.json()["code"], "locked_out")
        self.assertFalse(AuthToken.objects.exists())


class TokenTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def obtain(self, client: APIClient) -> dict:
        response = client.post(
            "/api/token/", {"username": "alice", "password": PASSWORD}, format="json"
        )
        self.assertEqual(response.status_code, 200)
        return response.json()

    def test_a_token_expires_and_says_when(self):
        api = APIClient()
        body = self.obtain(api)
        expiry = parse_datetime(body["expiry"])
        self.assertAlmostEqual(
            (expiry - timezone.now()).total_seconds(), timedelta(hours=24).total_seconds(), delta=60
        )
        api.credentials(HTTP_AUTHORIZATION=f"Token {body['token']}")
        self.assertEqual(api.get("/api/benchmarks/").status_code, 200)
        AuthToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))
        self.assertEqual(api.get("/api/benchmarks/").status_code, 401)

    def test_only_a_digest_of_the_token_is_stored(self):
        token = self.obtain(APIClient())["token"]
        stored = AuthToken.objects.get()
        self.assertNotIn(token, (stored.digest, stored.token_key))

    def test_logging_out_of_the_web_revokes_every_api_token(self):
        # The reproduction: a token used to survive logout.
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {self.obtain(APIClient())['token']}")
        self.assertEqual(api.get("/api/benchmarks/").status_code, 200)
        self.client.force_login(self.people["reviewer"])
        self.assertEqual(self.client.post(reverse("logout")).status_code, 302)
        self.assertEqual(api.get("/api/benchmarks/").status_code, 401)
        self.assertFalse(AuthToken.objects.exists())

    def test_a_script_revokes_its_own_token(self):
        first, second = APIClient(), APIClient()
        first.credentials(HTTP_AUTHORIZATION=f"Token {self.obtain(APIClient())['token']}")
        second.credentials(HTTP_AUTHORIZATION=f"Token {self.obtain(APIClient())['token']}")
        self.assertEqual(first.post("/api/token/revoke/").json(), {"revoked": 1})
        self.assertEqual(first.get("/api/benchmarks/").status_code, 401)
        self.assertEqual(second.get("/api/benchmarks/").status_code, 200)
        self.assertEqual(second.post("/api/token/revoke/?all=1").json(), {"revoked": 1})
        self.assertEqual(APIClient().post("/api/token/revoke/").status_code, 401)

    def test_wrong_methods_and_bad_input_are_refused(self):
        self.assertEqual(APIClient().get("/api/token/").status_code, 405)
        self.assertEqual(APIClient().post("/api/token/", {}, format="json").status_code, 400)


def test_passwords_need_twelve_characters_and_not_only_digits():
    for weak in ("short-pw", "123456789012345", "password1234"):
        try:
            validate_password(weak)
        except ValidationError:
            continue
        raise AssertionError(f"{weak!r} was accepted")
    validate_password("amber-otter-lantern")
