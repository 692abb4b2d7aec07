"""A synthetic benchmark for load tests: many items, a few shared images, double assignments.

Written with batched inserts (an import of that many real frames reads and checks every file;
this is for measuring the review workflow at scale, not the import). The assignments go
through `assignments_create`, as a curator's would, so the queues' ranks and counts are kept
as in production.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.translation import gettext as _
from PIL import Image as PillowImage

from annotations.access import REVIEWER
from annotations.models import (
    Benchmark,
    Family,
    Item,
    ItemImage,
    ItemRevision,
    ItemStatus,
    RevisionReason,
)
from annotations.services.errors import DomainError
from annotations.services.images import image_store
from annotations.services.review import assignments_create
from annotations.services.stats import tables_analyze

BATCH = 5000
IMAGES = 8  # shared by every item: the bench measures the queue, not image bytes
COLOURS = [(180, 60, 50), (200, 120, 90), (150, 40, 60), (220, 170, 140)]
CATEGORIES = ("Polyp", "Ulcer", "Bleeding", "Normal")
Progress = Callable[[int], None]


def _jpeg(index: int) -> bytes:
    buffer = io.BytesIO()
    colour = COLOURS[index % len(COLOURS)]
    PillowImage.new("RGB", (320 + 16 * index, 240), colour).save(buffer, "JPEG", quality=80)
    return buffer.getvalue()


def seed_reviewers(*, prefix: str, count: int, password: str) -> list:
    """`count` reviewers named PREFIX-r1…, with one password (hashed once: fast to create)."""
    group, _created = Group.objects.get_or_create(name=REVIEWER)
    User = get_user_model()
    names = [f"{prefix}-r{n}" for n in range(1, count + 1)]
    existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    hashed = make_password(password)
    User.objects.bulk_create(
        [User(username=name, password=hashed) for name in names if name not in existing]
    )
    users = list(User.objects.filter(username__in=names).order_by("pk"))
    group.user_set.add(*users)
    return users


def _items(benchmark: Benchmark, start: int, stop: int) -> list[Item]:
    return [
        Item(
            benchmark=benchmark,
            source_index=index,
            question=f"Which finding is shown in frame {index}?",
            options=list(CATEGORIES),
            answer="ABCD"[index % 4],
            category=CATEGORIES[index % 4],
            split="test",
            status=ItemStatus.PENDING,
        )
        for index in range(start, stop)
    ]


@transaction.atomic
def benchmark_seed(
    *,
    name: str,
    items: int,
    reviewers: int,
    password: str,
    per_item: int = 2,
    progress: Progress | None = None,
) -> tuple[Benchmark, list]:
    """Create benchmark `name` with `items` items over a few shared images, and give each item
    to `per_item` of `reviewers` new reviewers. Refuses an existing name."""
    if Benchmark.objects.filter(name=name).exists():
        raise DomainError(_("A benchmark named %(name)s already exists.") % {"name": name})
    if items < 1 or reviewers < per_item:
        raise DomainError(_("Give at least one item and %(n)d reviewers.") % {"n": per_item})
    benchmark = Benchmark.objects.create(
        name=name,
        family=Family.VLMEVAL,
        columns=["index", "image", "question", "A", "B", "C", "D", "answer", "category", "split"],
        option_letters=["A", "B", "C", "D"],
    )
    images = [image_store(data=_jpeg(n))[0] for n in range(IMAGES)]
    for start in range(0, items, BATCH):
        made = Item.objects.bulk_create(_items(benchmark, start, min(start + BATCH, items)))
        ItemImage.objects.bulk_create(
            ItemImage(item_id=item.pk, image=images[item.source_index % IMAGES], position=0)
            for item in made
        )
        ItemRevision.objects.bulk_create(
            ItemRevision(
                item_id=item.pk, version=1, content=item.content(), reason=RevisionReason.IMPORTED
            )
            for item in made
        )
        if progress:
            progress(len(made))
    tables_analyze(Item, ItemImage, ItemRevision)
    users = seed_reviewers(prefix=name, count=reviewers, password=password)
    assignments_create(benchmark=benchmark, reviewers=users, per_item=per_item)
    return benchmark, users
