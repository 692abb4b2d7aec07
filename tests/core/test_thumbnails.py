"""List thumbnails: small WebP made once per image and size, behind the image's access check."""

from __future__ import annotations

import io
import tempfile

import numpy as np
from django.test import override_settings
from django.urls import reverse
from PIL import Image as PILImage

from annotations.imaging.thumbs import make_thumbnail
from annotations.services.thumbnails import thumbnail_path
from tests.access.helpers import AccessTestCase, assigned, people_with_combinations
from tests.factories import jpeg_bytes, make_benchmark, make_item

MEDIA = tempfile.mkdtemp(prefix="thumbs-")


@override_settings(MEDIA_ROOT=MEDIA)
class ThumbnailTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        cls.benchmark, cls.items = assigned("thumbs", [cls.people["reviewer"]], per_item=1)
        big = make_item(cls.benchmark, image=jpeg_bytes(size=(1600, 1200)))
        cls.image = big.item_images.get().image
        cls.url = reverse("image", args=[cls.image.sha256]) + "?w=96"

    def body(self, response) -> bytes:
        return b"".join(response.streaming_content)

    def test_a_small_webp_is_served_instead_of_the_full_image(self):
        response = self.page("reviewer", self.url)
        self.assertEqual(response["Content-Type"], "image/webp")
        data = self.body(response)
        with PILImage.open(io.BytesIO(data)) as thumb:
            self.assertEqual((thumb.format, thumb.size), ("WEBP", (96, 72)))
        full = self.body(self.page("reviewer", reverse("image", args=[self.image.sha256])))
        self.assertLess(len(data) * 5, len(full))

    def test_it_is_made_once_and_then_read_from_its_stored_file(self):
        self.body(self.page("reviewer", self.url))
        path = thumbnail_path(self.image, 96)
        made = path.stat().st_mtime_ns
        path.write_bytes(path.read_bytes() + b"")  # same bytes, new mtime if rewritten
        kept = path.stat().st_mtime_ns
        self.assertEqual(self.body(self.page("curator", self.url)), path.read_bytes())
        self.assertEqual(path.stat().st_mtime_ns, kept)
        self.assertGreaterEqual(kept, made)
        self.assertIn(self.image.sha256, path.name)

    def test_the_access_check_is_the_image_routes(self):
        outside = make_item(make_benchmark("elsewhere-thumbs"), image=jpeg_bytes(color=(1, 2, 3)))
        sha = outside.item_images.get().image.sha256
        url = reverse("image", args=[sha]) + "?w=96"
        self.assertEqual(self.page("reviewer", url).status_code, 404)
        self.assertFalse(thumbnail_path(outside.item_images.get().image, 96).exists())
        self.assertEqual(self.page("outsider", self.url).status_code, 403)
        self.assertEqual(self.client.logout() or self.client.get(self.url).status_code, 302)

    def test_an_unknown_size_is_404_and_makes_no_file(self):
        for size in ("97", "abc", "100000"):
            url = reverse("image", args=[self.image.sha256]) + f"?w={size}"
            self.assertEqual(self.page("reviewer", url).status_code, 404, size)
        self.assertEqual(list(thumbnail_path(self.image, 96).parent.glob("*-97.webp")), [])


def test_a_16_bit_greyscale_png_is_stretched_not_clipped():
    ramp = np.linspace(0, 4000, 64 * 64, dtype=np.uint16).reshape(64, 64)
    source = io.BytesIO()
    PILImage.fromarray(ramp).save(source, "PNG")
    source.seek(0)
    with PILImage.open(io.BytesIO(make_thumbnail(source, 32))) as thumb:
        pixels = np.asarray(thumb.convert("L"))
    assert thumb.size == (32, 32)
    assert pixels.min() < 10 and pixels.max() > 240  # clipping would leave it almost all white
