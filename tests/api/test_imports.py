"""POST /api/imports/ and GET /api/jobs/ID/, and the web form that starts the same imports."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from django.utils import translation
from rest_framework.test import APIClient

from annotations.models import Benchmark, Job
from annotations.tasks.imports import benchmark_import_task
from tests.core.test_import import ENDO_HEADER, endo_row
from tests.factories import make_benchmark, make_personas
from tests.formats.builders import b64, jpeg_bytes, tsv_text
from tests.formats.test_endobench import json_item

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def people():
    return make_personas()


def client_of(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def endo_tsv(*rows: list[str]) -> bytes:
    return tsv_text([ENDO_HEADER, *rows]).encode()


def good_tsv() -> bytes:
    return endo_tsv(endo_row(1, b64(jpeg_bytes("red"))), endo_row(2, b64(jpeg_bytes("blue"))))


def post(client, name="endo", family="endobench", data: bytes | None = None, file_name="e.tsv"):
    upload = SimpleUploadedFile(file_name, good_tsv() if data is None else data)
    return client.post(
        reverse("api-imports"), {"file": upload, "family": family, "name": name}, format="multipart"
    )


def test_an_import_is_accepted_then_done_by_the_worker(people, django_capture_on_commit_callbacks):
    client = client_of(people["curator"])
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = post(client)
    assert response.status_code == 202
    body = response.json()
    assert body["state"] == "queued" and body["kind"] == "import" and len(queued) == 1
    assert body["url"] == reverse("api-job", args=[body["id"]])

    benchmark_import_task(body["id"])  # what the worker runs

    job = client.get(body["url"]).json()
    assert job["state"] == "done" and job["progress"]["percent"] == 100.0
    assert job["report"]["items"] == 2 and job["report"]["benchmark"] == "endo"
    assert Benchmark.objects.get(name="endo").items.count() == 2


def test_bad_rows_end_the_job_with_a_translated_report(people, django_capture_on_commit_callbacks):
    client = client_of(people["curator"])
    bad = endo_tsv(endo_row(1, b64(jpeg_bytes())), endo_row(2, "not-an-image-cell"))
    with django_capture_on_commit_callbacks(execute=False):
        job_id = post(client, data=bad).json()["id"]
    benchmark_import_task(job_id)
    job = client.get(reverse("api-job", args=[job_id])).json()
    assert job["state"] == "failed" and job["report"]["problems_total"] == 1
    (problem,) = job["report"]["problems"]
    assert (problem["row"], problem["column"], problem["code"]) == (
        2,
        "image",
        "image_not_readable",
    )
    # The second data row of a TSV is its third line, as an editor numbers it.
    assert problem["where"] == "Line 3 (row 2), column “image”"
    assert "neither a valid base64 image nor the index" in problem["message"]
    # The job's page: no half-filled bar, a way back to the form, the same place named.
    client.force_login(people["curator"])
    page = client.get(reverse("job", args=[job_id]))
    html = page.content.decode()
    assert 'role="progressbar"' not in html
    assert f'href="{reverse("benchmark-import")}" data-back-to-import' in html
    assert "Line 3 (row 2), column “image”" in html
    zh = client.get(reverse("api-job", args=[job_id]), HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert zh["report"]["problems"][0]["message"] != problem["message"]
    assert not Benchmark.objects.filter(name="endo").exists()


def test_a_bad_header_is_refused_at_once_with_the_report(people):
    header = [name for name in ENDO_HEADER if name != "question"]
    response = post(
        client_of(people["curator"]), data=tsv_text([header, ["1"] * len(header)]).encode()
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "import_failed"
    (problem,) = body["report"]["problems"]
    assert (problem["row"], problem["column"], problem["code"]) == (0, "question", "missing_column")
    assert problem["where"] == "Header, column “question”"  # never "row 0"
    assert not Job.objects.exists() and not Benchmark.objects.exists()


@pytest.mark.parametrize(
    ("family", "file_name", "data", "code"),
    [
        ("endobench", "e.csv", b"x", "wrong_file_type"),
        ("gastricx", "cases.zip", b"not a zip", "import_failed"),
        ("vlmeval", "v.tsv", b"index\tquestion\xff\xfe\n", "import_failed"),
        ("vlmeval", "v.tsv", b"", None),
    ],
)
def test_bad_uploads_are_400_and_store_nothing(people, family, file_name, data, code, settings):
    response = post(client_of(people["curator"]), family=family, data=data, file_name=file_name)
    assert response.status_code == 400, response.content
    if code is None:
        assert list(response.json()) == ["file"]  # an empty file is no file
    else:
        assert response.json()["code"] == code
    assert not Job.objects.exists()
    uploads = settings.MEDIA_ROOT / "uploads"
    assert not uploads.exists() or not any(uploads.iterdir())


def test_missing_fields_an_unknown_family_and_a_taken_name_are_400(people):
    make_benchmark("taken")
    client = client_of(people["curator"])
    response = client.post(reverse("api-imports"), {"name": "x"}, format="multipart")
    assert response.status_code == 400 and set(response.json()) == {"file", "family"}
    assert post(client, family="dicom").status_code == 400
    taken = post(client, name="taken")
    assert taken.status_code == 400 and "already exists" in taken.json()["detail"]
    assert not Job.objects.exists()


@override_settings(MAX_UPLOAD_BYTES=100)
def test_an_upload_past_the_limit_is_400(people):
    response = post(client_of(people["curator"]), data=b"x" * 5000)
    assert response.status_code == 400 and response.json()["code"] == "too_large"
    assert not Job.objects.exists()


def test_only_curators_import_and_follow_jobs(people):
    job = Job.objects.create(kind="import")
    for role in ("reviewer", "adjudicator", "outsider"):
        assert post(client_of(people[role])).status_code == 403, role
        assert client_of(people[role]).get(reverse("api-job", args=[job.pk])).status_code == 403
    assert post(client_of()).status_code == 401
    assert client_of().get(reverse("api-job", args=[job.pk])).status_code == 401
    curator = client_of(people["curator"])
    assert curator.get(reverse("api-job", args=[job.pk + 1])).status_code == 404
    assert curator.get(reverse("api-imports")).status_code == 405
    assert Job.objects.count() == 1


def test_an_endobench_zip_of_json_and_images_is_imported(
    people, django_capture_on_commit_callbacks
):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        items = [json_item(1, "frames/a.jpg"), json_item(2, "frames/b.jpg")]
        zipped.writestr("EndoBench/EndoBench.json", json.dumps(items))
        zipped.writestr("EndoBench/frames/a.jpg", jpeg_bytes("red"))
        zipped.writestr("EndoBench/frames/b.jpg", jpeg_bytes("green"))
    client = client_of(people["curator"])
    with django_capture_on_commit_callbacks(execute=False):
        response = post(client, name="endo-json", data=archive.getvalue(), file_name="endo.zip")
    assert response.status_code == 202
    benchmark_import_task(response.json()["id"])
    job = client.get(response.json()["url"]).json()
    assert job["state"] == "done", job
    assert Benchmark.objects.get(name="endo-json").items.count() == 2


class TestImportForm:
    """The web form starts the same imports; a refused form keeps the chosen file."""

    def test_the_chosen_file_is_kept_by_name_after_a_form_error(self, client, people):
        make_benchmark("taken")
        client.force_login(people["curator"])
        upload = SimpleUploadedFile("my-endobench.tsv", good_tsv())
        url = reverse("benchmark-import")
        page = client.post(url, {"name": "taken", "family": "endobench", "file": upload})
        assert "already exists" in page.content.decode()
        assert "my-endobench.tsv" in page.content.decode()
        kept = page.context["kept"]
        # Sent again with a free name and no new file: the kept file is imported.
        response = client.post(url, {"name": "free", "family": "endobench", "kept": kept.token})
        job = Job.objects.get()
        assert response.status_code == 302 and job.params["file_name"] == "my-endobench.tsv"
        assert job.params["path"] == str(kept.path)

    def test_another_users_token_finds_nothing(self, client, people):
        client.force_login(people["curator"])
        url = reverse("benchmark-import")
        page = client.post(url, {"name": "x", "family": "endobench", "kept": "0" * 32})
        assert "Choose a file to import." in page.content.decode()
        assert not Job.objects.exists()

    def test_every_family_is_offered(self, client, people):
        client.force_login(people["curator"])
        form = client.get(reverse("benchmark-import")).context["form"]
        families = [value for value, _ in form.fields["family"].choices]
        assert families == ["vlmeval", "endobench", "medqdeg", "gastricx"]

    def test_a_bad_header_is_listed_in_plain_words_in_chinese(self, client, people):
        client.force_login(people["curator"])
        header = [name for name in ENDO_HEADER if name != "answer"]
        upload = SimpleUploadedFile("bad.tsv", tsv_text([header]).encode())
        with translation.override("zh-hans"):
            page = client.post(
                reverse("benchmark-import"),
                {"name": "bad", "family": "endobench", "file": upload},
                HTTP_ACCEPT_LANGUAGE="zh-hans",
            )
        text = page.content.decode()
        assert 'data-code="missing_column"' in text
        assert "row 0" not in text.lower()
        assert "This required column is missing." not in text  # translated
        assert not Job.objects.exists()
