"""A NUL byte or undecodable bytes in any parameter is a 400, never a 500 (PostgreSQL refuses
NUL in text). Run on SQLite by `make test` and on PostgreSQL by `make integration`."""

from __future__ import annotations

import json

from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Review
from tests.factories import make_personas
from tests.review.helpers import assigned_benchmark


class UndecodableInputTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = assigned_benchmark(cls.people, items=1)

    def setUp(self):
        self.client.force_login(self.people["curator"])
        self.api = APIClient()
        self.api.force_authenticate(self.people["curator"])

    def test_a_nul_byte_in_a_query_string_is_a_400_not_a_500(self):
        # The reproduction: a filter by a name with a NUL was a 500 on PostgreSQL.
        for url in ("/api/runs/?benchmark=%00", "/api/benchmarks/?x=a%00b", "/runs/?benchmark=%00"):
            with self.subTest(url=url):
                response = self.api.get(url) if url.startswith("/api/") else self.client.get(url)
                self.assertEqual(response.status_code, 400)
        self.assertEqual(self.api.get("/api/runs/?benchmark=%00").json()["code"], "bad_input")

    def test_bytes_that_are_not_utf8_in_a_query_string_are_a_400(self):
        self.assertEqual(self.client.get("/runs/?benchmark=%ff%fe").status_code, 400)
        self.assertEqual(self.client.get("/runs/?benchmark=caf%C3%A9").status_code, 200)

    def test_a_nul_byte_in_the_path_is_a_400(self):
        self.assertEqual(self.client.get("/benchmarks/a%00b/").status_code, 400)

    def test_a_nul_byte_in_a_form_field_is_a_400_and_nothing_is_saved(self):
        item = self.items[0]
        self.client.force_login(self.people["reviewer"])
        url = reverse("review-item", args=[item.pk])
        data = {"verdict": "reject", "reason": "ambiguous", "version": 1, "comment": "a\x00b"}
        self.assertEqual(self.client.post(url, data).status_code, 400)
        multipart = self.client.post(url, {**data, "comment": "x\x00"}, format="multipart")
        self.assertEqual(multipart.status_code, 400)
        self.assertFalse(Review.objects.exists())

    def test_a_nul_in_a_json_body_raw_or_escaped_is_a_400(self):
        api = APIClient()
        api.force_authenticate(self.people["reviewer"])
        url = reverse("api-item-reviews", args=[self.items[0].pk])
        body = {"verdict": "accept", "version": 1, "comment": "a\u0000b"}
        escaped = api.post(url, json.dumps(body), content_type="application/json")
        self.assertEqual(escaped.status_code, 400)
        raw = api.post(
            url, b'{"verdict": "accept", "version": 1, "comment": "\x00"}',
            content_type="application/json",
        )  # fmt: skip
        self.assertEqual(raw.status_code, 400)
        latin1 = api.post(
            url, '{"comment": "caf\xe9"}'.encode("latin-1"), content_type="application/json"
        )
        self.assertEqual(latin1.status_code, 400)
        self.assertFalse(Review.objects.exists())
        # A backslash followed by u0000 typed as text is no NUL: it is saved as typed.
        text = {"verdict": "accept", "version": 1, "comment": "\\u0000 is how JSON writes NUL"}
        saved = api.post(url, json.dumps(text), content_type="application/json")
        self.assertEqual(saved.status_code, 201)
        self.assertEqual(Review.objects.get().comment, text["comment"])
