"""The viewer's streamed voxels: one slice and chunks of slices, int16 little-endian, gzip,
cacheable; anonymous users, outsiders and out-of-range indices refused."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from django.urls import reverse

from annotations.imaging import chunks
from annotations.selectors.cases import volume_voxels
from tests.factories import PASSWORD


def logged_in(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def body(response) -> bytes:
    data = b"".join(response.streaming_content) if response.streaming else response.content
    return gzip.decompress(data) if response.get("Content-Encoding") == "gzip" else data


def test_one_slice_comes_alone_gzip_encoded_with_caching_headers(client, small_case, people):
    volume = small_case.volumes.get(phase="delayed")  # 8 slices of 40×32
    url = reverse("volume-slice-voxels", args=[volume.pk, 5])
    response = logged_in(client, people["reviewer"]).get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
    assert response["X-Slices"] == "5,6" and "private" in response["Cache-Control"]
    voxels = np.frombuffer(body(response), dtype="<i2").reshape(40, 32)
    assert np.array_equal(voxels, volume_voxels(volume)[5])

    again = client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    plain = client.get(url)
    assert "Content-Encoding" not in plain and np.array_equal(
        np.frombuffer(plain.content, dtype="<i2").reshape(40, 32), volume_voxels(volume)[5]
    )
    assert client.get(reverse("volume-slice-voxels", args=[volume.pk, 8])).status_code == 404


def test_chunks_together_are_the_volume_and_the_last_one_is_short(client, small_case, people):
    volume = small_case.volumes.get(phase="delayed")
    settings_slices = chunks.CHUNK_SLICES
    logged_in(client, people["reviewer"])
    parts, etags = [], []
    for index in range(chunks.chunk_count(volume.size_z)):
        url = reverse("volume-chunk", args=[volume.pk, index])
        response = client.get(url, HTTP_ACCEPT_ENCODING="gzip, br")
        assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
        z0, z1 = (int(v) for v in response["X-Slices"].split(","))
        assert (z0, z1) == (index * settings_slices, min((index + 1) * settings_slices, 8))
        parts.append(np.frombuffer(body(response), dtype="<i2").reshape(z1 - z0, 40, 32))
        etags.append(response["ETag"])
        assert client.get(url, HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304
    assert np.array_equal(np.concatenate(parts), volume_voxels(volume))
    plain = client.get(reverse("volume-chunk", args=[volume.pk, 0]))
    assert "Content-Encoding" not in plain
    assert plain.content == np.ascontiguousarray(parts[0]).astype("<i2").tobytes()
    past = reverse("volume-chunk", args=[volume.pk, chunks.chunk_count(volume.size_z)])
    assert client.get(past).status_code == 404


def test_streamed_voxels_need_a_login_and_a_role(client, small_case, people):
    volume = small_case.volumes.get(phase="venous")
    urls = [
        reverse("volume-slice-voxels", args=[volume.pk, 0]),
        reverse("volume-chunk", args=[volume.pk, 0]),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]
    logged_in(client, people["outsider"])
    for url in urls:
        assert client.get(url).status_code == 403


def test_a_stored_volume_reads_back_by_slice_by_range_and_whole_and_serves_plain_gzip(tmp_path):
    voxels = (np.arange(37 * 5 * 4, dtype=np.int32).reshape(37, 5, 4) % 3000 - 1024).astype(
        np.int16
    )
    # Given in uneven slabs, stored in chunks of CHUNK_SLICES.
    folder = chunks.write_chunked_volume([voxels[:7], voxels[7:30], voxels[30:]], tmp_path / "v")
    stored = chunks.ChunkedVolume(folder)
    assert stored.shape == (37, 5, 4) and len(stored.offsets) == chunks.chunk_count(37)
    assert np.array_equal(np.asarray(stored), voxels)
    assert all(np.array_equal(stored[z], voxels[z]) for z in (0, 15, 16, 36, -1))
    assert np.array_equal(stored[10:20], voxels[10:20])
    assert np.array_equal(stored[3, 1:4, 2], voxels[3, 1:4, 2])
    # Each chunk file is one plain gzip member, as the browser inflates it.
    last = gzip.decompress(stored.chunk_file(2).read_bytes())
    assert last == voxels[32:].astype("<i2").tobytes()
    assert chunks.chunk_range(1, 20, 16) == (16, 20) and chunks.chunk_count(20, 16) == 2
    with pytest.raises(IndexError):
        stored[37]
    (folder / chunks.INDEX_NAME).unlink()  # written last: without it, not a stored volume
    with pytest.raises(chunks.ChunkError):
        chunks.ChunkedVolume(folder)
