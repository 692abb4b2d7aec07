"""Small factories and personas shared by the Django tests."""

from __future__ import annotations

import io
import itertools

from django.contrib.auth import get_user_model
from django.db.models import Max
from PIL import Image as PILImage

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER
from annotations.models import Benchmark, Item, ItemImage, ItemRevision, RevisionReason
from annotations.services.images import image_store
from annotations.services.users import user_ensure

PASSWORD = "correct-horse-battery"
_counter = itertools.count(1)


def make_user(username: str, *roles: str):
    if roles:
        return user_ensure(username=username, password=PASSWORD, roles=roles)[0]
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    return user


def make_personas() -> dict:
    """reviewer, reviewer2, adjudicator, curator and an outsider (logged in, no role)."""
    return {
        "reviewer": make_user("alice", REVIEWER),
        "reviewer2": make_user("bob", REVIEWER),
        "adjudicator": make_user("carol", ADJUDICATOR),
        "curator": make_user("dave", CURATOR),
        "outsider": make_user("eve"),
    }


def jpeg_bytes(color=(200, 80, 60), size=(32, 24), quality=90) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def png_bytes(color=(10, 120, 200), size=(20, 16)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def make_benchmark(name: str | None = None, family: str = "vlmeval", **fields) -> Benchmark:
    name = name or f"bench-{next(_counter)}"
    defaults = {
        "columns": ["index", "image", "question", "A", "B", "C", "D", "answer", "category"],
        "option_letters": ["A", "B", "C", "D"],
    }
    defaults.update(fields)
    return Benchmark.objects.create(name=name, family=family, **defaults)


def make_item(
    benchmark: Benchmark, *, index: int | None = None, image: bytes | None = None, **fields
) -> Item:
    if index is None:
        highest = Item.objects.filter(benchmark=benchmark).aggregate(m=Max("source_index"))["m"]
        index = (highest or 0) + 1
    values = {
        "question": f"Which finding is shown in frame {index}?",
        "options": ["Polyp", "Ulcer", "Normal mucosa", "Bleeding"],
        "answer": "A",
        "category": "Lesion",
    }
    values.update(fields)
    item = Item.objects.create(benchmark=benchmark, source_index=index, **values)
    stored, _ = image_store(data=image or jpeg_bytes(color=(index % 255, 90, 60)))
    ItemImage.objects.create(item=item, image=stored, position=0)
    ItemRevision.objects.create(
        item=item, version=1, content=item.content(), reason=RevisionReason.IMPORTED
    )
    return item
