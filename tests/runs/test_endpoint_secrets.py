"""Endpoint keys: only from CLINREVIEW_KEY_* variables or stored encrypted; allowed hosts only;
never shown on a page, in the admin, the API or the log."""

from __future__ import annotations

import logging

import pytest
from cryptography.fernet import Fernet
from django.test import TestCase, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import ModelEndpoint, Run, RunStatus
from annotations.services import runs as run_services
from annotations.services.errors import DomainError
from tests.factories import make_personas
from tests.runs.helpers import fast_passwords, make_endpoint, make_run_benchmark
from tests.support.fake_openai import FakeOpenAIServer, answer_letter

FERNET_KEY = Fernet.generate_key().decode()
TYPED_KEY = "sk-typed-8f3a1c9e-never-shown-again"


@fast_passwords
class EndpointKeyTests(TestCase):
    url = reverse("run-create")

    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = make_run_benchmark(3, name="endo-keys")

    def setUp(self):
        self.client.force_login(self.people["curator"])

    def form(self, **overrides) -> dict:
        data = {
            "source": "new",
            "name": "remote-vlm",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "vlm",
            "benchmark": "endo-keys",
            "concurrency": "1",
            "with_image": "on",
        }
        return {**data, **overrides}

    def test_a_server_secret_cannot_be_named_as_the_api_key_variable(self):
        for name in ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CLINREVIEW_KEY_"):
            with self.subTest(name=name), self.captureOnCommitCallbacks(execute=False):
                response = self.client.post(self.url, self.form(api_key_env=name))
                self.assertContains(response, "CLINREVIEW_KEY_", status_code=400)
        self.assertFalse(ModelEndpoint.objects.filter(name="remote-vlm").exists())
        self.assertFalse(Run.objects.exists())

    @override_settings(ENDPOINT_KEY_ENV_PREFIX="LAB_KEY_")
    def test_the_prefix_is_configured(self):
        with self.captureOnCommitCallbacks(execute=False):
            refused = self.client.post(self.url, self.form(api_key_env="CLINREVIEW_KEY_A"))
            self.assertContains(refused, "LAB_KEY_", status_code=400)
            self.client.post(self.url, self.form(api_key_env="LAB_KEY_A"))
        self.assertEqual(ModelEndpoint.objects.get(name="remote-vlm").api_key_env, "LAB_KEY_A")

    @override_settings(ENDPOINT_ALLOWED_HOSTS=["models.example.org", ".lab.example.org"])
    def test_only_allowed_hosts_take_an_endpoint(self):
        for url in ("http://attacker.example.com/v1", "http://example.org/v1", "file:///etc/x"):
            with self.subTest(url=url):
                response = self.client.post(self.url, self.form(base_url=url))
                self.assertEqual(response.status_code, 400)
        self.assertFalse(ModelEndpoint.objects.filter(name="remote-vlm").exists())
        for url in ("https://models.example.org/v1", "http://gpu1.lab.example.org:8000/v1"):
            with self.subTest(url=url), self.captureOnCommitCallbacks(execute=False):
                response = self.client.post(self.url, self.form(base_url=url, name=url[-20:]))
                self.assertEqual(response.status_code, 302)

    @override_settings(ENDPOINT_KEY_ENCRYPTION_KEY="")
    def test_a_typed_key_is_refused_without_an_encryption_key(self):
        response = self.client.post(self.url, self.form(api_key=TYPED_KEY))
        self.assertContains(response, "ENDPOINT_KEY_ENCRYPTION_KEY", status_code=400)
        self.assertNotContains(response, TYPED_KEY, status_code=400)
        self.assertFalse(ModelEndpoint.objects.filter(name="remote-vlm").exists())

    @override_settings(ENDPOINT_KEY_ENCRYPTION_KEY=FERNET_KEY)
    def test_a_typed_key_is_stored_encrypted_and_never_shown_again(self):
        with self.captureOnCommitCallbacks(execute=False):
            response = self.client.post(self.url, self.form(api_key=TYPED_KEY))
        self.assertEqual(response.status_code, 302)
        endpoint = ModelEndpoint.objects.get(name="remote-vlm")
        self.assertNotIn(TYPED_KEY, endpoint.api_key_encrypted)
        stored = Fernet(FERNET_KEY.encode()).decrypt(endpoint.api_key_encrypted.encode())
        self.assertEqual(stored.decode(), TYPED_KEY)
        # A refused form keeps what was typed except the key.
        refused = self.client.post(self.url, self.form(api_key=TYPED_KEY, concurrency="999"))
        self.assertEqual(refused.status_code, 400)
        self.assertNotContains(refused, TYPED_KEY, status_code=400)

    @override_settings(ENDPOINT_KEY_ENCRYPTION_KEY=FERNET_KEY)
    def test_the_key_appears_on_no_page_api_answer_admin_page_or_log_line(self):
        admin = self.people["curator"]
        admin.is_staff = admin.is_superuser = True
        admin.save()
        with FakeOpenAIServer(answer_letter("A")) as server:
            with self.captureOnCommitCallbacks(execute=False):
                self.client.post(self.url, self.form(base_url=server.base_url, api_key=TYPED_KEY))
            run = Run.objects.get()
            with self.assertLogs(level=logging.DEBUG) as logs:
                logging.getLogger("annotations").debug("start of the captured log")
                run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
            headers = server.request_headers
        self.assertTrue(headers)
        self.assertTrue(all(h["authorization"] == f"Bearer {TYPED_KEY}" for h in headers))
        endpoint = run.endpoint
        pages = [
            reverse("runs"),
            reverse("run", args=[run.pk]),
            reverse("admin:annotations_modelendpoint_changelist"),
            reverse("admin:annotations_modelendpoint_change", args=[endpoint.pk]),
            reverse("admin:annotations_run_change", args=[run.pk]),
        ]
        for url in pages:
            with self.subTest(url=url):
                response = self.client.get(url)
                self.assertEqual(response.status_code, 200)
                self.assertNotIn(TYPED_KEY, response.content.decode())
                self.assertNotIn(endpoint.api_key_encrypted, response.content.decode())
        api = APIClient()
        api.force_authenticate(self.people["curator"])
        for url in (reverse("api-runs"), reverse("api-run", args=[run.pk])):
            with self.subTest(url=url):
                body = api.get(url).content.decode()
                self.assertNotIn(TYPED_KEY, body)
                self.assertNotIn(endpoint.api_key_encrypted, body)
        self.assertNotIn(TYPED_KEY, "\n".join(logs.output))

    def test_an_endpoint_saved_with_a_server_secret_before_the_rule_gets_nothing(self):
        with FakeOpenAIServer(answer_letter("A")) as server:
            endpoint = make_endpoint(server.base_url, name="old")
            ModelEndpoint.objects.filter(pk=endpoint.pk).update(api_key_env="SECRET_KEY")
            endpoint.refresh_from_db()
            run = run_services.run_create(
                benchmark=self.benchmark, endpoint=endpoint, enqueue=False
            )
            with pytest.raises(DomainError):
                run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
            self.assertEqual(server.request_headers, [])
        run.refresh_from_db()
        self.assertEqual(run.status, RunStatus.FAILED)
        self.assertIn("CLINREVIEW_KEY_", run.error)
