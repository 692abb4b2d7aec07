"""The Jobs page: background work of every kind, stuck and recovered work marked, and a retry
for what failed, each through its own kind's retry."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from unittest import mock

from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from annotations.models import Job, JobChunk, Prediction, Release, Run
from annotations.selectors.jobs import PER_PAGE
from tests.factories import PASSWORD, make_benchmark, make_item, make_personas


def _ago(seconds: float):
    return timezone.now() - timedelta(seconds=seconds)


class JobsPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("gastro")
        for index in range(3):
            make_item(cls.benchmark, index=index)
        cls.url = reverse("jobs")

    def setUp(self):
        self.client.login(username="dave", password=PASSWORD)

    def _world(self):
        """One of each kind, created oldest first."""
        rows = {
            "import": Job.objects.create(kind="import", params={"name": "uploaded"}),
            "release": Release.objects.create(
                benchmark=self.benchmark, name="gastro", version="1", status="published"
            ),
            "run": Run.objects.create(
                benchmark=self.benchmark, kind="model", label="m", status="failed", error="boom"
            ),
            "human": Run.objects.create(benchmark=self.benchmark, kind="human", label="h"),
            "degrade": Job.objects.create(
                kind="degrade",
                benchmark=self.benchmark,
                status="running",
                total=8,
                done=3,
                attempts=1,
                recoveries=1,
                heartbeat_at=_ago(600),
            ),
            "triage": Job.objects.create(
                kind="triage", benchmark=self.benchmark, status="running", heartbeat_at=_ago(2)
            ),
        }
        for number, status in enumerate(("done", "running")):
            JobChunk.objects.create(
                job=rows["degrade"], number=number, status=status, total=4, recoveries=number + 1
            )
        for position, row in enumerate(rows.values()):
            type(row).objects.filter(pk=row.pk).update(created_at=_ago(1000 - position))
        return rows

    def test_a_curator_sees_every_kind_of_work_newest_first_without_human_baselines(self):
        rows = self._world()
        response = self.client.get(self.url)
        self.assertEqual(response.status_code, 200)
        listed = [(row.source, row.row_id) for row in response.context["page"].object_list]
        self.assertEqual(
            listed,
            [
                ("job", rows["triage"].pk),
                ("job", rows["degrade"].pk),
                ("run", rows["run"].pk),
                ("release", rows["release"].pk),
                ("job", rows["import"].pk),
            ],
        )
        triage, degrade, run, release, upload = response.context["page"].object_list
        self.assertEqual((degrade.stuck, degrade.recovered, degrade.tries), (True, 1 + 1 + 2, 1))
        self.assertEqual((degrade.chunks_done, degrade.chunks_total), (1, 2))
        self.assertFalse(triage.stuck)
        self.assertLess(triage.beat_seconds, 60)
        self.assertEqual((release.state, upload.bench, run.note), ("done", "uploaded", "boom"))
        self.assertEqual([row.retryable for row in (run, upload)], [True, False])
        self.assertContains(response, "recovered after a worker died ×4")
        self.assertContains(response, "⚠ Stuck")
        self.assertContains(response, "1 of 2 parts done")
        self.assertContains(response, reverse("job", args=[rows["degrade"].pk]))
        self.assertContains(response, reverse("release", args=[rows["release"].pk]))

    def test_it_filters_by_state(self):
        rows = self._world()
        Release.objects.create(benchmark=self.benchmark, name="gastro", version="2")  # building

        def listed(state):
            response = self.client.get(self.url, {"state": state})
            return {(row.source, row.row_id) for row in response.context["page"].object_list}

        self.assertEqual(listed("stuck"), {("job", rows["degrade"].pk)})
        self.assertEqual(listed("failed"), {("run", rows["run"].pk)})
        self.assertEqual(len(listed("running")), 3)  # two jobs and the building release
        self.assertEqual(listed("queued"), {("job", rows["import"].pk)})
        self.assertEqual(listed("done"), {("release", rows["release"].pk)})
        self.assertEqual(len(listed("nonsense")), 6)  # an unknown state is no filter

    def test_the_number_of_queries_does_not_grow_with_the_rows_and_pages_are_cut(self):
        self._world()
        with self.assertNumQueries(5):  # session, user, roles; the count; the page
            self.client.get(self.url)
        for _ in range(PER_PAGE + 10):
            Job.objects.create(kind="triage", benchmark=self.benchmark, status="failed")
        with self.assertNumQueries(5):
            response = self.client.get(self.url)
        self.assertEqual(len(response.context["page"].object_list), PER_PAGE)
        response = self.client.get(self.url, {"page": 2})
        self.assertEqual(len(response.context["page"].object_list), 15)
        self.assertContains(response, "Page 2 of 2")

    def test_the_top_bar_links_the_page_for_curators_only(self):
        self.assertContains(self.client.get(reverse("dashboard")), f'href="{self.url}"')
        self.client.login(username="carol", password=PASSWORD)
        self.assertNotContains(self.client.get(reverse("dashboard")), f'href="{self.url}"')

    def test_other_roles_are_refused_and_anonymous_users_sent_to_log_in(self):
        job = Job.objects.create(kind="degrade", benchmark=self.benchmark, status="failed")
        retry = reverse("background-retry", args=["job", job.pk])
        for who in ("alice", "carol", "eve"):
            self.client.login(username=who, password=PASSWORD)
            self.assertEqual(self.client.get(self.url).status_code, 403)
            self.assertEqual(self.client.post(retry).status_code, 403)
        self.client.logout()
        self.assertIn("/login/", self.client.get(self.url).url)
        self.assertIn("/login/", self.client.post(retry).url)
        self.assertEqual(Job.objects.get(pk=job.pk).status, "failed")

    def test_wrong_methods_are_refused(self):
        job = Job.objects.create(kind="degrade", benchmark=self.benchmark, status="failed")
        self.assertEqual(self.client.post(self.url).status_code, 405)
        retry = reverse("background-retry", args=["job", job.pk])
        self.assertEqual(self.client.get(retry).status_code, 405)


class RetryTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("gastro")
        cls.items = [make_item(cls.benchmark, index=index) for index in range(3)]

    def setUp(self):
        self.client.login(username="dave", password=PASSWORD)

    def _retry(self, source: str, pk: int, **data):
        return self.client.post(reverse("background-retry", args=[source, pk]), data)

    def test_a_failed_degradation_goes_back_to_the_queue_keeping_its_done_parts(self):
        job = Job.objects.create(
            kind="degrade", benchmark=self.benchmark, status="failed", message="broke"
        )
        done = JobChunk.objects.create(job=job, number=0, status="done")
        failed = JobChunk.objects.create(job=job, number=1, status="failed")
        cancelled = JobChunk.objects.create(job=job, number=2, status="cancelled")
        with (
            mock.patch("annotations.tasks.degrade.benchmark_degrade_task.delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            response = self._retry("job", job.pk, state="failed")
        self.assertRedirects(response, self.url_state("failed"), fetch_redirect_response=False)
        delay.assert_called_once_with(job.pk)
        job.refresh_from_db()
        self.assertEqual((job.status, job.message), ("queued", ""))
        statuses = [JobChunk.objects.get(pk=c.pk).status for c in (done, failed, cancelled)]
        self.assertEqual(statuses, ["done", "queued", "queued"])

    def url_state(self, state: str) -> str:
        return reverse("jobs") + f"?state={state}"

    def test_the_job_page_retries_a_failed_triage_and_comes_back(self):
        job = Job.objects.create(kind="triage", benchmark=self.benchmark, status="failed")
        self.assertContains(self.client.get(reverse("job", args=[job.pk])), "Retry")
        with (
            mock.patch("annotations.tasks.triage.triage_benchmark_task.delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            response = self._retry("job", job.pk, return_to="job")
        self.assertRedirects(response, reverse("job", args=[job.pk]), fetch_redirect_response=False)
        delay.assert_called_once_with(job.pk)
        self.assertEqual(Job.objects.get(pk=job.pk).status, "queued")

    def test_a_failed_run_is_retried_by_the_runs_own_retry(self):
        run = Run.objects.create(benchmark=self.benchmark, kind="model", label="m", status="failed")
        Prediction.objects.create(run=run, item=self.items[0], extracted="A", hit=True)
        Prediction.objects.create(run=run, item=self.items[1], error="timeout")
        with (
            mock.patch("annotations.tasks.runs.run_chunk_execute.delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            self._retry("run", run.pk)
        # A run is answered chunk by chunk: its (one) chunk is queued again and its task sent.
        [chunk] = run.chunks.all()
        delay.assert_called_once_with(chunk.pk)
        run.refresh_from_db()
        self.assertEqual((run.status, run.total, run.completed), ("queued", 3, 1))
        self.assertEqual(
            list(run.predictions.values_list("item_id", flat=True)), [self.items[0].pk]
        )

    def test_a_failed_release_is_built_again(self):
        release = Release.objects.create(
            benchmark=self.benchmark, name="gastro", version="1", status="failed", error="disk"
        )
        with (
            mock.patch("annotations.tasks.releases.release_build_task.delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            self._retry("release", release.pk)
        delay.assert_called_once_with(release.pk)
        release.refresh_from_db()
        self.assertEqual((release.status, release.error), ("building", ""))

    def test_work_that_did_not_fail_or_has_no_retry_is_not_retried_here(self):
        running = Job.objects.create(kind="degrade", benchmark=self.benchmark, status="running")
        other = Job.objects.create(kind="contact_sheet", params={}, status="failed")
        for job in (running, other):
            response = self._retry("job", job.pk)
            self.assertRedirects(response, reverse("jobs"), fetch_redirect_response=False)
        page = self.client.get(reverse("jobs"))
        self.assertContains(page, "Only a failed job can be retried.")
        self.assertContains(page, "This kind of job is not retried here.")
        self.assertEqual(Job.objects.get(pk=running.pk).status, "running")
        self.assertEqual(Job.objects.get(pk=other.pk).status, "failed")

    def test_a_failed_import_whose_upload_was_kept_starts_over(self):
        upload = Path(self.enterContext(tempfile.TemporaryDirectory())) / "bench.tsv"
        upload.write_text("index\tquestion\n")
        job = Job.objects.create(
            kind="import",
            params={"name": "x", "family": "vlmeval", "path": str(upload)},
            status="failed",
            message="OperationalError: database is locked",
            total=10,
            done=7,
            result={"stage": "saving", "items": 40},
        )
        listed = self.client.get(reverse("jobs") + "?state=failed")
        self.assertContains(listed, reverse("background-retry", args=["job", job.pk]))
        self.assertContains(self.client.get(reverse("job", args=[job.pk])), "which was kept")
        with (
            mock.patch("annotations.tasks.imports.benchmark_import_task.delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            response = self._retry("job", job.pk, return_to="job")
        self.assertRedirects(response, reverse("job", args=[job.pk]), fetch_redirect_response=False)
        delay.assert_called_once_with(job.pk)
        job.refresh_from_db()
        self.assertEqual((job.status, job.message, job.done, job.result), ("queued", "", 0, {}))

    def test_an_import_refused_for_bad_input_is_uploaded_again_not_retried(self):
        job = Job.objects.create(
            kind="import",
            params={"name": "x", "family": "vlmeval", "path": "/nonexistent/upload/bench.tsv"},
            status="failed",
            result={"problems": ["row 3: broken image"], "problems_total": 1},
        )
        listed = self.client.get(reverse("jobs") + "?state=failed")
        self.assertNotContains(listed, reverse("background-retry", args=["job", job.pk]))
        self.assertNotContains(self.client.get(reverse("job", args=[job.pk])), "which was kept")
        with mock.patch("annotations.tasks.imports.benchmark_import_task.delay") as delay:
            self._retry("job", job.pk)
        delay.assert_not_called()
        self.assertContains(self.client.get(reverse("jobs")), "upload it again")
        self.assertEqual(Job.objects.get(pk=job.pk).status, "failed")

    def test_unknown_work_and_human_baselines_are_not_found(self):
        human = Run.objects.create(
            benchmark=self.benchmark, kind="human", label="h", status="failed"
        )
        self.assertEqual(self._retry("run", human.pk).status_code, 404)
        self.assertEqual(self._retry("job", 99999).status_code, 404)
        self.assertEqual(self._retry("volume", 1).status_code, 404)


@override_settings(JOB_STALE_SECONDS=3600)
class StaleLimitTests(TestCase):
    def test_the_stuck_mark_follows_the_reapers_limit(self):
        make_personas()
        benchmark = make_benchmark("b")
        Job.objects.create(
            kind="triage", benchmark=benchmark, status="running", heartbeat_at=_ago(600)
        )
        self.client.login(username="dave", password=PASSWORD)
        response = self.client.get(reverse("jobs"))
        self.assertFalse(response.context["page"].object_list[0].stuck)
        self.assertContains(response, "3600 s")
