"""Case list, case page, slice PNG and voxel endpoints: access, methods, effect, query counts."""

from __future__ import annotations

import gzip
import io

import numpy as np
from django.urls import reverse
from PIL import Image as PILImage

from annotations.imaging import ct
from annotations.selectors.cases import volume_voxels
from tests.factories import PASSWORD


def logged_in(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def urls(case) -> dict[str, str]:
    volume = case.volumes.get(phase="venous")
    return {
        "list": reverse("cases"),
        "benchmark_list": reverse("benchmark-cases", args=[case.benchmark.name]),
        "case": reverse("case", args=[case.pk]),
        "slice": reverse("volume-slice", args=[volume.pk, 3]),
        "voxels": reverse("volume-voxels", args=[volume.pk]),
    }


def test_anonymous_users_are_sent_to_the_login_page(client, small_case):
    for url in urls(small_case).values():
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url


def test_users_without_a_role_are_refused(client, small_case, people):
    logged_in(client, people["outsider"])
    for url in urls(small_case).values():
        assert client.get(url).status_code == 403, url


def test_only_get_is_allowed(client, small_case, people):
    logged_in(client, people["reviewer"])
    for url in urls(small_case).values():
        assert client.post(url).status_code == 405, url
        assert client.delete(url).status_code == 405, url


def test_every_role_sees_the_case_list_with_the_cases_in_its_scope(client, small_case, people):
    for persona in ("reviewer", "adjudicator", "curator"):
        response = logged_in(client, people[persona]).get(urls(small_case)["list"])
        assert response.status_code == 200
        # The adjudicator has no dispute in this benchmark: its case is not theirs to see.
        assert ("GX-S-0001" in response.content.decode()) == (persona != "adjudicator")


def test_the_case_list_takes_a_constant_number_of_queries(
    client, small_case, people, django_assert_num_queries
):
    url = urls(small_case)["benchmark_list"]
    logged_in(client, people["reviewer"])
    client.get(url)  # warm the session
    # session, user, roles, benchmark, count, the page of cases with all their counts
    with django_assert_num_queries(6):
        response = client.get(url)
    page = response.content.decode()
    assert "T3N1M0" in page and "0/13" in page  # every task's items of the case


def test_the_case_page_shows_viewer_indicators_reports_and_questions(client, imported, people):
    response = logged_in(client, people["reviewer"]).get(urls(imported)["case"])
    page = response.content.decode()
    assert response.status_code == 200
    assert page.count('class="ct-viewport') == 4
    assert 'class="out-of-range"' in page  # CEA 12.4 above 0–5
    assert "&lt;0.6" in page  # CA19-9 as the lab wrote it
    assert "What is the clinical TNM stage?" in page
    # Imported text is escaped, never interpreted as HTML.
    assert "&lt;b&gt;poorly&lt;/b&gt;" in page and "<b>poorly</b>" not in page
    config = response.context["viewer_config"]
    assert [v["phase"] for v in config["volumes"]] == [
        "non_contrast",
        "arterial",
        "venous",
        "delayed",
    ]
    # First slices are at one patient position: z -875 mm is slice 5, 10, 3 and ~6.75 → 7.
    assert [v["initialZ"] for v in config["volumes"]] == [5, 10, 3, 7]


def test_the_case_page_takes_a_constant_number_of_queries(
    client, small_case, people, django_assert_num_queries
):
    url = urls(small_case)["case"]
    logged_in(client, people["reviewer"])
    client.get(url)
    # session, user, roles, case, indicators, volumes, their boxes, items, endoscopy boxes,
    # may I draw on the CT, may I draw on the endoscopy image, which boxes I may see (blinding)
    with django_assert_num_queries(12):
        client.get(url)


def test_a_slice_png_is_windowed_on_the_server(client, small_case, people):
    volume = small_case.volumes.get(phase="venous")
    response = logged_in(client, people["reviewer"]).get(
        urls(small_case)["slice"] + "?ww=150&wl=90"
    )
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert "max-age=86400" in response["Cache-Control"]
    shown = np.asarray(PILImage.open(io.BytesIO(response.content)))
    expected = ct.apply_window(volume_voxels(volume)[3], 150, 90)
    assert np.array_equal(shown, expected)


def test_a_slice_outside_the_volume_is_not_found_and_a_bad_window_is_refused(
    client, small_case, people
):
    volume = small_case.volumes.get(phase="venous")
    logged_in(client, people["reviewer"])
    assert client.get(reverse("volume-slice", args=[volume.pk, 7])).status_code == 404
    assert client.get(urls(small_case)["slice"] + "?ww=abc").status_code == 400
    assert client.get(urls(small_case)["slice"] + "?ww=0").status_code == 400


def test_voxels_come_gzip_encoded_int16_little_endian_with_caching_headers(
    client, small_case, people
):
    volume = small_case.volumes.get(phase="arterial")
    url = reverse("volume-voxels", args=[volume.pk])
    response = logged_in(client, people["reviewer"]).get(url, HTTP_ACCEPT_ENCODING="gzip, br")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert response["X-Volume-Shape"] == "6,40,32"
    assert "private" in response["Cache-Control"] and response["ETag"]
    body = gzip.decompress(b"".join(response.streaming_content))
    voxels = np.frombuffer(body, dtype="<i2").reshape(volume.shape)
    assert np.array_equal(voxels, volume_voxels(volume))

    again = client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    plain = client.get(url)
    assert "Content-Encoding" not in plain and len(plain.content) == voxels.nbytes
