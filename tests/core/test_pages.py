"""Access rules and content of the foundation pages and API."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Assignment, Job
from tests.factories import PASSWORD, make_benchmark, make_item, make_personas


class PagesTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("endo", family="endobench")
        cls.item = make_item(
            cls.benchmark, index=7, question="Is there a <script>alert(1)</script> polyp?"
        )
        cls.image = cls.item.item_images.get().image
        # The reviewer's scope (selectors.visibility): the benchmarks they are given items of.
        Assignment.objects.create(item=cls.item, reviewer=cls.people["reviewer"], slot=1)

    def login(self, role: str) -> None:
        self.client.force_login(self.people[role])


class DashboardTest(PagesTestCase):
    def test_anonymous_users_are_sent_to_the_login_page(self):
        for url in [
            "/",
            reverse("benchmark", args=["endo"]),
            reverse("item", args=[self.item.pk]),
            reverse("image", args=[self.image.sha256]),
            reverse("benchmark-import"),
        ]:
            response = self.client.get(url)
            self.assertEqual(response.status_code, 302, url)
            self.assertTrue(response["Location"].startswith("/login/"), url)

    def test_a_user_without_a_role_is_refused(self):
        self.login("outsider")
        for url in [
            "/",
            reverse("benchmark", args=["endo"]),
            reverse("item", args=[self.item.pk]),
            reverse("image", args=[self.image.sha256]),
        ]:
            self.assertEqual(self.client.get(url).status_code, 403, url)

    def test_the_dashboard_counts_items_by_status_in_constant_queries(self):
        make_item(self.benchmark, status="agreed")
        self.login("reviewer")
        # session, user, groups, benchmarks, counts, the reviewer's open work by benchmark
        with self.assertNumQueries(6):
            response = self.client.get("/")
        self.assertContains(response, "endo")
        self.assertContains(response, "Agreed <b>1</b>", html=False)
        for _ in range(5):
            item = make_item(make_benchmark())
            Assignment.objects.create(item=item, reviewer=self.people["reviewer"], slot=1)
        with self.assertNumQueries(6):
            response = self.client.get("/")
        self.assertEqual(len(response.context["summaries"]), 6)

    def test_post_is_not_allowed_on_the_dashboard(self):
        self.login("curator")
        self.assertEqual(self.client.post("/").status_code, 405)

    def test_imported_text_is_escaped(self):
        self.login("reviewer")
        for url in [reverse("benchmark", args=["endo"]), reverse("item", args=[self.item.pk])]:
            response = self.client.get(url)
            self.assertNotContains(response, "<script>alert(1)</script>")
            self.assertContains(response, "&lt;script&gt;alert(1)&lt;/script&gt;")

    def test_the_image_is_served_to_a_reviewer(self):
        self.login("reviewer")
        response = self.client.get(reverse("image", args=[self.image.sha256]))
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "image/jpeg")
        self.assertIn("private", response["Cache-Control"])

    def test_the_health_check_needs_no_login(self):
        response = self.client.get(reverse("health"))
        self.assertEqual(response.json(), {"status": "ok"})


class ImportPageTest(PagesTestCase):
    def test_only_curators_open_the_import_page(self):
        for role in ["reviewer", "adjudicator", "outsider"]:
            self.login(role)
            self.assertEqual(self.client.get(reverse("benchmark-import")).status_code, 403, role)
        self.login("curator")
        self.assertContains(self.client.get(reverse("benchmark-import")), "Import a benchmark")

    def test_put_is_not_allowed(self):
        self.login("curator")
        self.assertEqual(self.client.put(reverse("benchmark-import")).status_code, 405)

    def test_an_upload_creates_a_job_and_queues_the_import(self):
        self.login("curator")
        upload = SimpleUploadedFile("bench.tsv", b"index\timage\tquestion\tA\tanswer\n")
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.client.post(
                reverse("benchmark-import"),
                {"name": "new-bench", "family": "vlmeval", "file": upload},
            )
        job = Job.objects.get()
        self.assertRedirects(response, reverse("job", args=[job.pk]), fetch_redirect_response=False)
        self.assertEqual(job.params["family"], "vlmeval")
        self.assertEqual(len(callbacks), 1)  # the task is queued only once the job row is committed

    def test_a_taken_name_is_refused(self):
        self.login("curator")
        upload = SimpleUploadedFile("bench.tsv", b"x")
        response = self.client.post(
            reverse("benchmark-import"), {"name": "endo", "family": "vlmeval", "file": upload}
        )
        self.assertContains(response, "already exists")
        self.assertFalse(Job.objects.exists())

    @override_settings(MAX_UPLOAD_BYTES=10)
    def test_an_oversized_upload_is_refused(self):
        self.login("curator")
        upload = SimpleUploadedFile("bench.tsv", b"x" * 11)
        response = self.client.post(
            reverse("benchmark-import"), {"name": "big", "family": "vlmeval", "file": upload}
        )
        self.assertContains(response, "larger than the upload limit")
        self.assertFalse(Job.objects.exists())

    def test_the_job_page_polls_while_running_and_stops_when_done(self):
        job = Job.objects.create(kind="import", status="running", total=10, done=4)
        self.login("curator")
        response = self.client.get(reverse("job", args=[job.pk]), headers={"HX-Request": "true"})
        self.assertContains(response, 'hx-trigger="every 1s"')
        self.assertNotContains(response, "<html")
        Job.objects.filter(pk=job.pk).update(status="done", result={"benchmark": "endo"})
        response = self.client.get(reverse("job", args=[job.pk]))
        self.assertNotContains(response, 'hx-trigger="every 1s"')
        self.assertContains(response, reverse("benchmark", args=["endo"]))


class ApiTest(PagesTestCase):
    def test_a_token_is_obtained_with_username_and_password(self):
        client = APIClient()
        response = client.post(
            "/api/token/", {"username": "alice", "password": PASSWORD}, format="json"
        )
        token = response.json()["token"]
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        rows = client.get("/api/benchmarks/").json()
        self.assertEqual(
            rows, [{"name": "endo", "family": "endobench", "total": 1, "counts": {"pending": 1}}]
        )

    def test_a_wrong_password_gets_no_token(self):
        response = APIClient().post(
            "/api/token/", {"username": "alice", "password": "nope"}, format="json"
        )
        self.assertEqual(response.status_code, 400)

    def test_anonymous_api_calls_are_refused(self):
        self.assertEqual(APIClient().get("/api/benchmarks/").status_code, 401)
        self.assertEqual(APIClient().get("/api/schema/").status_code, 401)

    def test_the_schema_is_served_to_logged_in_users(self):
        client = APIClient()
        client.force_authenticate(self.people["reviewer"])
        response = client.get("/api/schema/")
        self.assertEqual(response.status_code, 200)
        self.assertIn(b"/api/benchmarks/", response.content)
