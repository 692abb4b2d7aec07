"""Pools and the benchmarks drawn from them: marking a pool, drawing, topping up.

The draw itself is pure (annotations.sampling); this module reads the pool for it, leaves out
what must not be drawn (images of other benchmarks, by sha256 and by perceptual hash), and
writes the drawn benchmark: its items copied from the pool items with their lineage (the
`pool_item` link, and a `pool_index` column that releases carry), a revision for each, and a
second revision where the answer's position was balanced.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import cast

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.models import (
    TAXONOMY_FIELDS,
    Assignment,
    Benchmark,
    Draw,
    DrawStratum,
    ImageHash,
    Item,
    ItemImage,
    ItemKind,
    ItemRevision,
    ItemStatus,
    RevisionReason,
)
from annotations.sampling import quotas as quota_rules
from annotations.sampling.draw import (
    Answerable,
    Candidate,
    DrawOutcome,
    Stratum,
    balance_positions,
    draw,
    letter_counts,
    move_answer,
)
from annotations.services.bulk_rows import insert_items_returning_ids, insert_rows
from annotations.services.errors import DomainError

POOL_INDEX_COLUMN = "pool_index"  # the pool item's index, carried in releases
STRATUM_FIELDS = TAXONOMY_FIELDS
PHASH_DISTANCE = 6  # the triage's near-image threshold (bits of 64)
_CHUNK = 500  # ids per IN (...) query, below SQLite's parameter limit


@dataclass(frozen=True)
class DrawRequest:
    """What to draw: `per` flags (FIELD=N) or a quota file's text, and the options."""

    name: str
    seed: int
    per: Sequence[str] = ()
    quota_csv: str = ""
    balance_answers: bool = False
    exclude_near_duplicates: bool = False
    exclude_images_of: Sequence[str] = ()


@dataclass
class Exclusions:
    """Pool items left out before drawing, and why (counts of items and of images)."""

    items: set[int] = field(default_factory=set)
    by_sha256: int = 0
    by_phash: int = 0
    images_sha256: int = 0
    images_phash: int = 0

    def as_report(self) -> dict:
        return {
            "items_by_sha256": self.by_sha256,
            "items_by_phash": self.by_phash,
            "images_by_sha256": self.images_sha256,
            "images_by_phash": self.images_phash,
        }


def stratum_label(values: Iterable[str]) -> str:
    return " / ".join(value or "—" for value in values)


# --- pools ---------------------------------------------------------------------------------


def pool_mark(*, benchmark: Benchmark, is_pool: bool = True) -> Benchmark:
    """Mark a benchmark as a pool (or not), keeping its item count for the pool's pages."""
    if is_pool and benchmark.drawn_from_id is not None:
        raise DomainError(_("A benchmark drawn from a pool cannot be a pool itself."))
    benchmark.is_pool = is_pool
    benchmark.item_count = Item.objects.filter(benchmark=benchmark).count()
    benchmark.save(update_fields=["is_pool", "item_count"])
    return benchmark


# --- drawing -------------------------------------------------------------------------------


def benchmark_draw(*, pool: Benchmark, request: DrawRequest, user=None) -> Draw:
    """Draw a new benchmark from `pool` (see the module's docstring); returns its Draw, whose
    `report` says what was drawn, left out and moved."""
    if not pool.is_pool:
        raise DomainError(_("%(name)s is not a pool.") % {"name": pool.name})
    try:
        validate_slug(request.name)
    except ValidationError:
        raise DomainError(
            _("A benchmark's name uses letters, digits, hyphens and underscores only.")
        ) from None
    if Benchmark.objects.filter(name=request.name).exists():
        raise DomainError(
            _("A benchmark named '%(name)s' already exists.") % {"name": request.name}
        )
    try:
        if request.quota_csv.strip():
            fields, quotas = quota_rules.parse_quota_csv(request.quota_csv, STRATUM_FIELDS)
            per_count = None
        else:
            fields, per_count = quota_rules.parse_per(request.per, STRATUM_FIELDS)
            quotas = {}
    except quota_rules.QuotaError as error:
        raise DomainError(str(error)) from None
    others = _other_benchmarks(pool, request.exclude_images_of)
    members = _members(pool, fields)
    if per_count is not None:
        quotas = quota_rules.per_quotas(members, per_count)
    missing = quota_rules.unknown_strata(quotas, members)
    if missing:
        raise DomainError(
            _("The pool has no item in: %(strata)s.")
            % {"strata": "; ".join(stratum_label(s) for s in missing[:10])}
        )
    exclusions = _exclusions(pool, others)
    members = _without(members, exclusions.items)
    outcome = draw(
        members,
        quotas,
        request.seed,
        _lookup,
        near_duplicates=request.exclude_near_duplicates,
    )
    with transaction.atomic():
        benchmark = Benchmark.objects.create(
            name=request.name,
            family=pool.family,
            description=_("Drawn from the pool %(pool)s (seed %(seed)d).")
            % {"pool": pool.name, "seed": request.seed},
            taxonomy=pool.taxonomy,
            columns=_columns(pool),
            option_letters=pool.option_letters,
            label_sets=pool.label_sets,
            drawn_from=pool,
            created_by=user,
        )
        record = Draw.objects.create(
            benchmark=benchmark,
            pool=pool,
            seed=request.seed,
            fields=fields,
            balance_answers=request.balance_answers,
            exclude_near_duplicates=request.exclude_near_duplicates,
            exclude_images_of=[other.name for other in others],
            created_by=user,
        )
        DrawStratum.objects.bulk_create(
            DrawStratum(
                draw=record,
                values=list(stratum),
                label=stratum_label(stratum),
                quota=quota,
                exhausted=stratum in outcome.exhausted,
            )
            for stratum, quota in sorted(quotas.items())
        )
        round_report = _write(record, outcome, exclusions, user, start=1)
        record.report = {"rounds": [round_report]}
        record.save(update_fields=["report"])
        benchmark.item_count = round_report["drawn"]
        benchmark.save(update_fields=["item_count"])
    return record


def benchmark_top_up(*, benchmark: Benchmark, user=None) -> dict:
    """Draw replacements for the rejected items of a drawn benchmark: per stratum as many as
    its quota lacks, from the same stratum, never an item drawn before (nor a question already
    drawn on the same image), with the same exclusions and balance; assigned like the rest.
    Returns this round's report."""
    record = _draw_of(benchmark)
    strata = {tuple(s.values): s for s in record.strata.all()}
    quotas = {stratum: s.quota for stratum, s in strata.items()}
    standing = _standing(benchmark, record.fields)
    if all(standing.get(stratum, 0) >= quota for stratum, quota in quotas.items()):
        raise DomainError(_("Every stratum holds its quota: nothing to replace."))
    others = _other_benchmarks(record.pool, record.exclude_images_of)
    exclusions = _exclusions(record.pool, others)
    members = _without(_members(record.pool, record.fields), exclusions.items)
    pool_ids = list(
        Item.objects.filter(benchmark=benchmark, pool_item__isnull=False).values_list(
            "pool_item_id", flat=True
        )
    )
    earlier = _lookup(pool_ids)
    outcome = draw(
        members,
        quotas,
        record.seed,
        _lookup,
        drawn_before=list(earlier.values()),
        have=standing,
        near_duplicates=record.exclude_near_duplicates,
    )
    with transaction.atomic():
        record = Draw.objects.select_for_update().get(pk=record.pk)
        last = Item.objects.filter(benchmark=benchmark).aggregate(m=Max("source_index"))["m"]
        round_report = _write(
            record,
            outcome,
            exclusions,
            user,
            start=(last or 0) + 1,
            standing=_standing_answers(benchmark, record.fields),
        )
        for stratum, row in strata.items():
            exhausted = stratum in outcome.exhausted
            if row.exhausted != exhausted:
                row.exhausted = exhausted
                row.save(update_fields=["exhausted"])
        record.report = {"rounds": [*record.report.get("rounds", []), round_report]}
        record.save(update_fields=["report"])
        Benchmark.objects.filter(pk=benchmark.pk).update(
            item_count=Item.objects.filter(benchmark=benchmark).count()
        )
        _assign_like_the_rest(benchmark, user)
    return round_report


def _standing_answers(benchmark: Benchmark, fields: Sequence[str]) -> list[Answerable]:
    """The letters of the drawn items that stand (not rejected): a top-up balances around them."""
    rows = (
        Item.objects.filter(benchmark=benchmark, kind=ItemKind.MCQ)
        .exclude(status=ItemStatus.REJECTED)
        .values_list("id", "options", "answer", *fields)
    )
    return [
        Answerable(pk, tuple(values), _option_count(options), ord(answer) - 65)
        for pk, options, answer, *values in rows.iterator(chunk_size=5000)
        if _is_letter(answer)
    ]


def _draw_of(benchmark: Benchmark) -> Draw:
    try:
        return Draw.objects.select_related("pool").get(benchmark=benchmark)
    except Draw.DoesNotExist:
        raise DomainError(
            _("%(name)s was not drawn from a pool.") % {"name": benchmark.name}
        ) from None


def _other_benchmarks(pool: Benchmark, names: Iterable[str]) -> list[Benchmark]:
    names = [name for name in dict.fromkeys(n.strip() for n in names) if name]
    found = {b.name: b for b in Benchmark.objects.filter(name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        raise DomainError(_("No benchmark named %(names)s.") % {"names": ", ".join(unknown)})
    if pool.name in found:
        raise DomainError(_("A pool's images cannot be excluded from itself."))
    return [found[name] for name in names]


def _members(pool: Benchmark, fields: Sequence[str]) -> dict[Stratum, list[int]]:
    members: dict[Stratum, list[int]] = defaultdict(list)
    rows = Item.objects.filter(benchmark=pool).order_by().values_list("id", *fields)
    for row in rows.iterator(chunk_size=20_000):
        members[tuple(row[1:])].append(row[0])
    return dict(members)


def _without(members: Mapping[Stratum, list[int]], excluded: set[int]) -> dict[Stratum, list[int]]:
    if not excluded:
        return dict(members)
    return {s: [k for k in keys if k not in excluded] for s, keys in members.items()}


def _lookup(keys: Sequence[int]) -> dict[int, Candidate]:
    """The pool items' questions and images, as the draw compares them."""
    images: dict[int, list[int]] = defaultdict(list)
    found: dict[int, Candidate] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = list(keys[start : start + _CHUNK])
        links = ItemImage.objects.filter(item_id__in=chunk).order_by("item_id", "position")
        for item_id, image_id in links.values_list("item_id", "image_id"):
            images[item_id].append(image_id)
        for pk, question in Item.objects.filter(pk__in=chunk).values_list("id", "question"):
            found[pk] = Candidate(pk, (), tuple(images[pk]), question)
    return found


def _exclusions(pool: Benchmark, others: Sequence[Benchmark]) -> Exclusions:
    """The pool items showing an image of another benchmark: the same file (sha256), or a
    perceptual hash within PHASH_DISTANCE bits of one of its images (hashes computed once per
    stored image, as the triage does)."""
    found = Exclusions()
    if not others:
        return found
    # Imported here: hashing loads imagehash and scipy, which only this check needs.
    from annotations.scoring.triage.duplicates import near_image_pairs
    from annotations.services import triage as triage_service

    pool_images = set(
        ItemImage.objects.filter(item__benchmark=pool).values_list("image_id", flat=True)
    )
    other_images = set(
        ItemImage.objects.filter(item__benchmark__in=others).values_list("image_id", flat=True)
    )
    same = pool_images & other_images
    for benchmark in (pool, *others):
        triage_service.image_hashes_ensure(benchmark=benchmark)
    phash: dict[Hashable, int] = {}
    dhash: dict[Hashable, int] = {}
    rest = pool_images - same
    for side, ids in (("pool", rest), ("other", other_images)):
        for image_id, p, d in _hashes(ids):
            phash[(side, image_id)], dhash[(side, image_id)] = p, d
    near = set()
    for a, b, _distance in near_image_pairs(phash, dhashes=dhash, max_distance=PHASH_DISTANCE):
        first, second = cast(tuple[str, int], a), cast(tuple[str, int], b)
        sides = {first[0]: first[1], second[0]: second[1]}
        if len(sides) == 2:
            near.add(sides["pool"])
    found.images_sha256, found.images_phash = len(same), len(near)
    for reason, images in (("sha256", same), ("phash", near)):
        items = _items_showing(pool, images) - found.items
        found.items |= items
        if reason == "sha256":
            found.by_sha256 = len(items)
        else:
            found.by_phash = len(items)
    return found


def _hashes(ids: Iterable[int]) -> Iterable[tuple[int, int, int]]:
    ids = list(ids)
    for start in range(0, len(ids), _CHUNK):
        rows = ImageHash.objects.filter(image_id__in=ids[start : start + _CHUNK]).exclude(phash="")
        for image_id, p, d in rows.values_list("image_id", "phash", "dhash"):
            yield image_id, int(p, 16), int(d or "0", 16)


def _items_showing(pool: Benchmark, images: set[int]) -> set[int]:
    ids = list(images)
    items: set[int] = set()
    for start in range(0, len(ids), _CHUNK):
        links = ItemImage.objects.filter(
            item__benchmark=pool, image_id__in=ids[start : start + _CHUNK]
        )
        items.update(links.values_list("item_id", flat=True))
    return items


def _columns(pool: Benchmark) -> list[str]:
    columns = list(pool.columns)
    return columns if not columns or POOL_INDEX_COLUMN in columns else [*columns, POOL_INDEX_COLUMN]


def _standing(benchmark: Benchmark, fields: Sequence[str]) -> dict[Stratum, int]:
    """Per stratum, the drawn items not rejected."""
    rows = (
        Item.objects.filter(benchmark=benchmark)
        .exclude(status=ItemStatus.REJECTED)
        .order_by()
        .values_list(*fields)
    )
    return dict(Counter(tuple(row) for row in rows.iterator(chunk_size=5000)))


# --- writing the drawn items ------------------------------------------------------------------

_COPIED = (
    "question",
    "hint",
    "options",
    "kind",
    "answer",
    "reference",
    "target",
    *TAXONOMY_FIELDS,
    "extra",
)


def _write(
    record: Draw,
    outcome: DrawOutcome,
    exclusions: Exclusions,
    user,
    *,
    start: int,
    standing: Sequence[Answerable] = (),
) -> dict:
    """Insert the drawn items (in stratum order, then draw order), balance their answers when
    the draw says so; returns the round's report."""
    keys = outcome.keys
    stratum_of = {key: stratum for stratum, chosen in outcome.chosen.items() for key in chosen}
    pool_rows = _pool_rows(keys)
    answerable = [
        Answerable(key, stratum_of[key], _option_count(row["options"]), ord(row["answer"]) - 65)
        for key in keys
        if (row := pool_rows[key])["kind"] == ItemKind.MCQ and _is_letter(row["answer"])
    ]
    moved = (
        balance_positions(answerable, record.seed, standing=standing)
        if record.balance_answers
        else {}
    )
    position = {a.key: moved.get(a.key, a.answer_position) for a in answerable}
    author = getattr(user, "pk", None)
    pool_name = Benchmark.objects.values_list("name", flat=True).get(pk=record.pool_id)
    for offset in range(0, len(keys), _CHUNK):
        chunk = keys[offset : offset + _CHUNK]
        items = [
            _drawn_item(record, pool_rows[key], start + offset + n) for n, key in enumerate(chunk)
        ]
        revisions = []
        for item in items:
            # Version 1 is the pool item's content; a balanced answer is version 2, so the
            # item is written once, as it ends (services.bulk_rows: no per-value compilation).
            revisions.append(_revision(item, 1, RevisionReason.DRAWN, author, pool_name))
            target = moved.get(item.pool_item_id) if item.pool_item_id else None
            if target is not None:
                was = item.answer
                item.options = move_answer(list(item.options), ord(was) - 65, target)
                item.answer = chr(65 + target)
                item.version = 2
                note = _("answer position balanced: %(was)s → %(now)s")
                note %= {"was": was, "now": item.answer}
                revisions.append(
                    _revision(item, 2, RevisionReason.BALANCED, author, pool_name, note=note)
                )
        ids = insert_items_returning_ids(
            Item,
            [vars(item) for item in items],
            scope={"benchmark_id": record.benchmark_id},
        )
        new_id = {item.pool_item_id: pk for item, pk in zip(items, ids, strict=True)}
        links = ItemImage.objects.filter(item_id__in=chunk).values_list(
            "item_id", "image_id", "position"
        )
        insert_rows(
            ItemImage,
            (
                {"item_id": new_id[pool_id], "image_id": image_id, "position": place}
                for pool_id, image_id, place in links
            ),
        )
        insert_rows(
            ItemRevision,
            (
                {**revision, "item_id": new_id[revision.pop("pool_item_id")]}
                for revision in revisions
            ),
        )
    return {
        "at": timezone.now().isoformat(timespec="seconds"),
        "drawn": len(keys),
        "per_stratum": {stratum_label(s): len(c) for s, c in sorted(outcome.chosen.items())},
        "exhausted": sorted(stratum_label(s) for s in outcome.exhausted),
        "excluded": exclusions.as_report(),
        "duplicates_skipped": outcome.duplicates_skipped,
        "near_duplicates_skipped": outcome.near_duplicates_skipped,
        "balanced": record.balance_answers,
        "moved": len(moved),
        "letters_before": letter_counts(answerable),
        "letters_after": letter_counts(answerable, lambda a: position[a.key]),
    }


def _pool_rows(keys: Sequence[int]) -> dict[int, dict]:
    rows: dict[int, dict] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        for row in Item.objects.filter(pk__in=chunk).values("id", "source_index", *_COPIED):
            rows[row["id"]] = row
    return rows


def _drawn_item(record: Draw, row: dict, index: int) -> SimpleNamespace:
    """The drawn item's row (not a model instance: 7,000 of those cost seconds), with the
    attributes Item.content reads."""
    fields = {name: row[name] for name in _COPIED}
    fields["extra"] = {**(row["extra"] or {}), POOL_INDEX_COLUMN: str(row["source_index"])}
    return SimpleNamespace(
        benchmark_id=record.benchmark_id,
        source_index=index,
        pool_item_id=row["id"],
        status=ItemStatus.PENDING,
        version=1,
        **fields,
    )


def _revision(
    item: SimpleNamespace, version: int, reason: str, author, pool: str, note: str = ""
) -> dict:
    """An ItemRevision row of the unsaved drawn item, keyed by its pool item until inserted."""
    if not note:
        note = _("drawn from %(pool)s, item %(index)s") % {
            "pool": pool,
            "index": item.extra.get(POOL_INDEX_COLUMN, ""),
        }
    return {
        "pool_item_id": item.pool_item_id,
        "version": version,
        "replaced_version": version - 1 if version > 1 else None,
        "content": Item.content(cast(Item, item)),
        "reason": reason,
        "note": note,
        "author_id": author,
    }


def _option_count(options: list) -> int:
    """Options in use: up to the last non-empty one (unused trailing columns are '')."""
    count = len(options)
    while count and not options[count - 1]:
        count -= 1
    return count


def _is_letter(answer: str) -> bool:
    return len(answer) == 1 and "A" <= answer <= "Z"


def _assign_like_the_rest(benchmark: Benchmark, user) -> int:
    """Give the new items to the reviewers who have the benchmark's other items, as many per
    item as they do; nothing when the benchmark is not assigned yet."""
    # Imported here: the review service loads the triage and imaging modules a draw never uses.
    from annotations.services.review import assignments_create

    rows = Assignment.objects.filter(item__benchmark=benchmark)
    reviewer_ids = set(rows.values_list("reviewer_id", flat=True))
    if not reviewer_ids:
        return 0
    per_item = rows.aggregate(m=Max("slot"))["m"] or 1
    reviewers = list(get_user_model().objects.filter(pk__in=reviewer_ids).order_by("username"))
    return assignments_create(
        benchmark=benchmark,
        reviewers=reviewers,
        per_item=min(per_item, len(reviewers)),
        filters={"status": ItemStatus.PENDING},
        assigned_by=user,
    )
