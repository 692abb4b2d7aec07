"""A synthetic benchmark for load tests: many items, a few shared images, double assignments.

Written with a few `INSERT … SELECT` statements that both databases run (an import of that
many real frames reads and checks every file, and Django model instances cost about a
millisecond each at this size on a busy machine: this measures the review workflow, not the
import). The assignments are as balanced as `assignments_create` makes them, and the queue
counts are added through the same helper.
"""

from __future__ import annotations

import io
import json
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _
from PIL import Image as PillowImage

from annotations.access import REVIEWER
from annotations.models import (
    Assignment,
    Benchmark,
    Family,
    Item,
    ItemImage,
    ItemKind,
    ItemRevision,
    ItemStatus,
    QueueCount,
    RevisionReason,
)
from annotations.services.errors import DomainError
from annotations.services.images import image_store
from annotations.services.review import queue_count_add
from annotations.services.stats import tables_analyze

BATCH = 5000
IMAGES = 8  # shared by every item: the bench measures the queue, not image bytes
COLOURS = [(180, 60, 50), (200, 120, 90), (150, 40, 60), (220, 170, 140)]
CATEGORIES = ("Polyp", "Ulcer", "Bleeding", "Normal")


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


# Consecutive numbers 0..n-1, as rows: a recursive query both databases run.
NUMBERS = "WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n < %s)"


def _case(expression: str, values: list) -> tuple[str, list]:
    """`CASE expression WHEN 0 THEN v0 WHEN 1 THEN v1 ... END` and its parameters."""
    whens = " ".join("WHEN %s THEN %s" for _value in values)
    params = [p for position, value in enumerate(values) for p in (position, value)]
    return f"CASE {expression} {whens} END", params


def _json(sql: str) -> str:
    return f"CAST({sql} AS jsonb)" if connection.vendor == "postgresql" else sql


def _insert_items(benchmark: Benchmark, count: int) -> None:
    """The items, in one statement (model instances cost ~1 ms each at this size)."""
    now = timezone.now()
    category, category_params = _case("n %% 4", list(CATEGORIES))
    answer, answer_params = _case("n %% 4", list("ABCD"))
    columns = (
        "benchmark_id, source_index, question, hint, options, kind, answer, reference, "
        "category, l2_category, split, task, subtask, scene, dataset, modality, source, extra, "
        "degradation_type, degradation_severity, status, version, created_at, updated_at"
    )
    text = "'Which finding is shown in frame ' || n || '?'"
    values = (
        f"%s, n, {text}, '', {_json('%s')}, %s, {answer}, '', {category}, '', 'test', '', '', "
        f"'', '', '', '', {_json('%s')}, '', '', %s, 1, %s, %s"
    )
    params: list[Any] = [count - 1, benchmark.pk, json.dumps(list(CATEGORIES)), ItemKind.MCQ]
    params += answer_params + category_params + ["{}", ItemStatus.IN_REVIEW, now, now]
    with connection.cursor() as cursor:
        cursor.execute(
            f"{NUMBERS} INSERT INTO {_table(Item)} ({columns}) SELECT {values} FROM seq", params
        )


def _insert_item_rows(benchmark: Benchmark, images: list) -> None:
    """Each item's image (shared round the few stored) and its imported revision."""
    image, image_params = _case(f"source_index %% {len(images)}", [i.pk for i in images])
    if connection.vendor == "postgresql":
        content = "json_build_object('question', question, 'hint', hint, 'options', options, "
        content += "'answer', answer)"
    else:
        content = "json_object('question', question, 'hint', hint, 'options', json(options), "
        content += "'answer', answer)"
    items = f"FROM {_table(Item)} WHERE benchmark_id = %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {_table(ItemImage)} (item_id, image_id, position) "
            f"SELECT id, {image}, 0 {items}",
            [*image_params, benchmark.pk],
        )
        cursor.execute(
            f"INSERT INTO {_table(ItemRevision)} (item_id, version, content, reason, note, "
            f"created_at) SELECT id, 1, {_json(content)}, %s, '', created_at {items}",
            [RevisionReason.IMPORTED, benchmark.pk],
        )


def _insert_assignments(benchmark: Benchmark, users: list, per_item: int) -> int:
    """Item n goes to reviewers n, n+1, ... (mod the reviewers), one per slot: as balanced
    as `assignments_create` makes them. The queue counts are added as it adds them."""
    now = timezone.now()
    ids = [user.pk for user in users]
    with connection.cursor() as cursor:
        for slot in range(1, per_item + 1):
            reviewer, params = _case(f"(source_index + {slot - 1}) %% {len(ids)}", ids)
            cursor.execute(
                f"INSERT INTO {_table(Assignment)} (item_id, reviewer_id, slot, created_at, "
                f"rank, pair) SELECT id, {reviewer}, %s, %s, 0.0, %s "
                f"FROM {_table(Item)} WHERE benchmark_id = %s",
                [*params, slot, now, False, benchmark.pk],
            )
    counts = (
        Assignment.objects.filter(item__benchmark=benchmark)
        .values_list("reviewer_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    for reviewer_id, n in counts:
        queue_count_add(reviewer_id, False, total=n)
    return sum(n for _reviewer, n in counts)


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@transaction.atomic
def benchmark_seed(
    *, name: str, items: int, reviewers: int, password: str, per_item: int = 2
) -> tuple[Benchmark, list, int]:
    """Create benchmark `name` with `items` items over a few shared images, and give each item
    to `per_item` of `reviewers` new reviewers (NAME-r1 ...). Refuses an existing name.
    Returns the benchmark, the reviewers and the number of assignments."""
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
    _insert_items(benchmark, items)
    _insert_item_rows(benchmark, images)
    users = seed_reviewers(prefix=name, count=reviewers, password=password)
    created = _insert_assignments(benchmark, users, per_item)
    tables_analyze(Item, ItemImage, ItemRevision, Assignment, QueueCount)
    return benchmark, users, created
