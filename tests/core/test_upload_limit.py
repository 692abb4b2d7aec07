"""An upload past MAX_UPLOAD_BYTES is refused as soon as the limit is passed: the rest of the
request body is never read (bytes read are counted at the WSGI input)."""

from __future__ import annotations

import io

from django.test import TestCase, override_settings
from django.test.client import BOUNDARY, MULTIPART_CONTENT, ClientHandler, encode_multipart
from django.urls import reverse

from annotations.models import Job
from annotations.uploads import FORM_ROOM_BYTES
from tests.factories import make_personas

LIMIT = 500_000


class CountingInput(io.BytesIO):
    """The request body as the server reads it, counting every byte taken."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk

    def readline(self, size=-1):
        line = super().readline(size)
        self.taken += len(line)
        return line


class _File(io.BytesIO):
    name = "bench.tsv"


@override_settings(MAX_UPLOAD_BYTES=LIMIT)
class UploadLimitTest(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()

    def post(self, size: int, *, declared: int | None = None):
        self.client.force_login(self.people["curator"])
        # A readable header (the form checks it at once), then filler up to `size` bytes.
        header = b"index\tquestion\tanswer\tA\tB\timage\n"
        content = header + b"x" * (size - len(header))
        body = encode_multipart(
            BOUNDARY, {"name": "big", "family": "vlmeval", "file": _File(content)}
        )
        stream = CountingInput(body)
        environ = {
            **self.client._base_environ(),
            "REQUEST_METHOD": "POST",
            "PATH_INFO": reverse("benchmark-import"),
            "CONTENT_TYPE": MULTIPART_CONTENT,
            "CONTENT_LENGTH": str(declared or len(body)),
            "wsgi.input": stream,
        }
        response = ClientHandler(enforce_csrf_checks=False)(environ)
        return response, stream, len(body)

    def test_a_file_past_the_limit_stops_being_read_at_the_limit(self):
        response, stream, total = self.post(10_000_000)

        self.assertEqual(response.status_code, 200)
        self.assertIn(b"larger than the upload limit", response.content)
        # The limit plus at most one chunk (64 KiB) and the form's headers, of a 10 MB body.
        self.assertLess(stream.taken, LIMIT + 64 * 1024 + 2_000)
        self.assertLess(stream.taken, total / 10)
        self.assertFalse(Job.objects.exists())

    def test_a_declared_length_past_the_limit_stops_before_the_first_byte_of_the_file(self):
        response, stream, total = self.post(LIMIT + FORM_ROOM_BYTES + 1)

        self.assertIn(b"larger than the upload limit", response.content)
        # Only what the parser reads ahead to find the file's headers: two 64 KiB chunks.
        self.assertLessEqual(stream.taken, 2 * 64 * 1024)
        self.assertLess(stream.taken, LIMIT)
        self.assertFalse(Job.objects.exists())

    def test_a_file_within_the_limit_is_taken_whole(self):
        response, stream, total = self.post(LIMIT - 1_000)

        self.assertEqual(response.status_code, 302)
        self.assertEqual(stream.taken, total)
        self.assertEqual(Job.objects.get().params["name"], "big")
