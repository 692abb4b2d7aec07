"""Blinded double review: assignments, review submission with the agreement rule, adjudication.

Every write names the item version it was based on. The version check is a conditional
``UPDATE ... WHERE version = n`` on the item row, done first in the transaction: it both detects a
stale write and takes the row's write lock, so two writers on one item are serialised and the
second one sees what the first committed (PostgreSQL re-checks the WHERE after the lock; SQLite
runs IMMEDIATE transactions one at a time).

Agreement rule (decided here, documented in the report): when every assigned reviewer has
submitted on the same version,
- all accept → ``agreed``;
- all edit with identical (normalised) content → ``agreed``, the content becomes a new revision;
- all reject (whatever their reason codes) → an agreed rejection: ``rejected``;
- anything else → ``disputed``, and the item enters the adjudication queue.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.access import REVIEWER, has_role
from annotations.models import (
    Adjudication,
    AdjudicationChoice,
    Assignment,
    Benchmark,
    Item,
    ItemRevision,
    ItemStatus,
    QueueCount,
    RejectReason,
    Review,
    RevisionReason,
    Verdict,
)
from annotations.selectors import visibility
from annotations.services import item_content
from annotations.services.errors import ConflictError, DomainError, NotAllowedError
from annotations.services.stats import ANALYZE_AFTER, tables_analyze
from annotations.services.triage import queue_ranks

ASSIGNABLE_STATUSES = (ItemStatus.PENDING, ItemStatus.IN_REVIEW)
ASSIGN_FILTERS = ("status", "category", "split", "task", "scene", "modality", "dataset")
MAX_PER_ITEM = 3
BATCH = 2000


@dataclass(frozen=True)
class ReviewOutcome:
    review: Review
    status: str  # the item's status after this review
    version: int


# --- content -------------------------------------------------------------------------------


def _max_options(benchmark: Benchmark) -> int:
    letters = [c for c in benchmark.option_letters or [] if len(c) == 1 and c.isupper()]
    letters = letters or [c for c in benchmark.columns or [] if len(c) == 1 and c.isupper()]
    return len(letters) or 10


def content_normalise(content: dict, kind: str | None = None) -> dict:
    """The comparable form of a content (see `item_content.content_normalise`)."""
    return item_content.content_normalise(content, kind)


def content_clean(raw: dict | None, *, item: Item) -> dict:
    """Validate a proposed content for this item; the hint stays the item's unless given."""
    return item_content.content_clean(raw, item=item, max_options=_max_options(item.benchmark))


def _apply_content(item: Item, content: dict) -> None:
    item_content.content_apply(item, content)


def _claim_version(item: Item, version: int, *, statuses: Iterable[str]) -> None:
    """Lock the item row if it is still at `version` in one of `statuses`, else raise."""
    claimed = Item.objects.filter(pk=item.pk, version=version, status__in=list(statuses)).update(
        updated_at=timezone.now()
    )
    if claimed:
        # The caller's object may be older than the row it just locked: work on the row.
        item.refresh_from_db(fields=[*item_content.CONTENT_FIELDS, "kind", "version", "status"])
        return
    current = Item.objects.filter(pk=item.pk).values_list("version", "status").first()
    if current is None:
        raise DomainError(_("This item no longer exists."), code="not_found")
    if current[0] != version:
        raise ConflictError(
            _(
                "This item changed since you opened it (you saw version %(old)s, it is now "
                "version %(new)s). Reload it and decide again."
            )
            % {"old": version, "new": current[0]},
            current_version=current[0],
        )
    raise DomainError(
        _("This item is %(status)s; it cannot take this decision now.")
        % {"status": ItemStatus(current[1]).label},
        code="wrong_status",
    )


def _edit_content(review: Review) -> dict:
    if not isinstance(review.content, dict):  # review_submit stores one with every edit
        raise DomainError(_("An edit needs the proposed question, options and answer."))
    return review.content


def _new_revision(item: Item, content: dict, *, reason: str, author, note: str = "") -> int:
    """Store `content` as the item's next version (the row is already locked by the caller)."""
    old = item.version
    ItemRevision.objects.create(
        item=item,
        version=old + 1,
        replaced_version=old,
        content=content,
        reason=reason,
        note=note,
        author=author,
    )
    _apply_content(item, content)
    item.version = old + 1
    return old + 1


# --- assignments ---------------------------------------------------------------------------


def _assignable_items(benchmark: Benchmark, filters: dict | None) -> QuerySet:
    items = Item.objects.filter(benchmark=benchmark, status__in=ASSIGNABLE_STATUSES)
    for name, value in (filters or {}).items():
        if name not in ASSIGN_FILTERS:
            raise DomainError(_("Unknown filter: %(name)s") % {"name": name})
        if value not in (None, "", []):
            items = items.filter(**{f"{name}__in" if isinstance(value, list) else name: value})
    return items.order_by("source_index")


def _check_reviewers(reviewers: list, per_item: int) -> list:
    unique = list({user.pk: user for user in reviewers}.values())
    if not 1 <= per_item <= MAX_PER_ITEM:
        raise DomainError(_("Reviews per item must be between 1 and %(n)d.") % {"n": MAX_PER_ITEM})
    if len(unique) < per_item:
        raise DomainError(
            _("%(n)d reviews per item need at least %(n)d different reviewers.") % {"n": per_item}
        )
    not_reviewers = [u.get_username() for u in unique if not has_role(u, REVIEWER)]
    if not_reviewers:
        raise DomainError(
            _("Not reviewers: %(names)s") % {"names": ", ".join(sorted(not_reviewers))}
        )
    return unique


@transaction.atomic
def assignments_create(
    *,
    benchmark: Benchmark,
    reviewers: list,
    per_item: int = 2,
    filters: dict | None = None,
    assigned_by=None,
) -> int:
    """Give each selected item to `per_item` different reviewers, balancing their open load.

    Items that already have reviewers only get the missing slots, never a second assignment to
    the same person. Returns the number of assignments created; assigned items become in_review.
    """
    reviewers = _check_reviewers(reviewers, per_item)
    items = _assignable_items(benchmark, filters)
    existing: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for item_id, reviewer_id, slot in Assignment.objects.filter(item__in=items).values_list(
        "item_id", "reviewer_id", "slot"
    ):
        existing[item_id].append((reviewer_id, slot))
    ranks = queue_ranks(benchmark)
    load = dict.fromkeys((u.pk for u in reviewers), 0)
    open_rows = Assignment.objects.filter(reviewer__in=reviewers, completed_at__isnull=True)
    for reviewer_id in open_rows.values_list("reviewer_id", flat=True):
        load[reviewer_id] += 1
    # A heap of (load, order, reviewer id) picks the least-loaded reviewers in a stable order.
    heap = [(load[u.pk], order, u.pk) for order, u in enumerate(reviewers)]
    heapq.heapify(heap)
    created = 0
    touched: list[int] = []
    batch: list[Assignment] = []
    counts: Counter[tuple[int, bool]] = Counter()
    rows = items.values_list("id", "clean_twin_id")
    for item_id, twin_of in rows.iterator(chunk_size=BATCH):
        taken = existing.get(item_id, [])
        picks = _pick(heap, per_item - len(taken), exclude={r for r, _s in taken})
        slots = iter(s for s in range(1, MAX_PER_ITEM + 1) if s not in {s for _r, s in taken})
        pair = twin_of is not None
        batch.extend(
            Assignment(
                item_id=item_id,
                reviewer_id=r,
                slot=next(slots),
                assigned_by=assigned_by,
                rank=ranks.get(item_id, 0.0),
                pair=pair,
            )
            for r in picks
        )
        counts.update((r, pair) for r in picks)
        if picks:
            touched.append(item_id)
        if len(batch) >= BATCH:
            created += len(Assignment.objects.bulk_create(batch))
            batch = []
    created += len(Assignment.objects.bulk_create(batch))
    for start in range(0, len(touched), BATCH):
        Item.objects.filter(
            pk__in=touched[start : start + BATCH], status=ItemStatus.PENDING
        ).update(status=ItemStatus.IN_REVIEW)
    for (reviewer_id, pair), n in counts.items():
        queue_count_add(reviewer_id, pair, total=n)
    if created >= ANALYZE_AFTER:
        transaction.on_commit(lambda: tables_analyze(Assignment, Item))
    return created


def queue_count_add(reviewer_id: int, pair: bool, *, total: int = 0, done: int = 0) -> None:
    """Add to a reviewer's queue counts (assignments given, completed)."""
    row, _created = QueueCount.objects.get_or_create(reviewer_id=reviewer_id, pair=pair)
    QueueCount.objects.filter(pk=row.pk).update(total=F("total") + total, done=F("done") + done)


def queue_count_done(*, reviewer, item: Item, step: int) -> None:
    """One more (step 1) or one fewer (-1) completed assignment in the reviewer's queue."""
    rows = QueueCount.objects.filter(reviewer=reviewer, pair=item.clean_twin_id is not None)
    if step < 0:
        rows = rows.filter(done__gte=-step)
    rows.update(done=F("done") + step)


def _pick(heap: list, count: int, *, exclude: set[int]) -> list[int]:
    if count <= 0:
        return []
    picked: list[tuple[int, int, int]] = []
    skipped: list[tuple[int, int, int]] = []
    while heap and len(picked) < count:
        entry = heapq.heappop(heap)
        (skipped if entry[2] in exclude else picked).append(entry)
    for load, order, reviewer_id in picked:
        heapq.heappush(heap, (load + 1, order, reviewer_id))
    for entry in skipped:
        heapq.heappush(heap, entry)
    return [entry[2] for entry in picked]


def reviewers_by_username(usernames: Iterable[str]) -> list:
    """The users named, in the order given; unknown names are a domain error."""
    names = [name.strip() for name in usernames if name and name.strip()]
    users = {u.get_username(): u for u in get_user_model().objects.filter(username__in=names)}
    missing = [name for name in names if name not in users]
    if missing:
        raise DomainError(_("Unknown users: %(names)s") % {"names": ", ".join(missing)})
    return [users[name] for name in names]


# --- reviews -------------------------------------------------------------------------------


def _review_fields(item: Item, verdict: str, content, reason: str) -> tuple[str, dict | None, str]:
    if verdict not in Verdict.values:
        raise DomainError(_("The verdict must be accept, edit or reject."))
    if verdict == Verdict.EDIT:
        content = content_clean(content, item=item)
        if content == content_normalise(item.content(), item.kind):
            # An "edit" that changes nothing is an accept; calling it an edit would only
            # manufacture a dispute with a reviewer who accepted.
            return Verdict.ACCEPT, None, ""
        return verdict, content, ""
    if verdict == Verdict.REJECT:
        if reason not in RejectReason.values:
            raise DomainError(_("A rejection needs a reason."))
        return verdict, None, reason
    return verdict, None, ""


@transaction.atomic
def review_submit(
    *,
    item: Item,
    reviewer,
    verdict: str,
    version: int,
    content: dict | None = None,
    reason: str = "",
    comment: str = "",
    seconds_spent: float | None = None,
    pair: dict | None = None,
) -> ReviewOutcome:
    """Record one assigned reviewer's verdict on `version` of the item, then apply the rule.

    `pair` holds the optional pair-review fields (answerable, realism, severity_judgement,
    identified_degraded_side, degraded_side) for degraded/clean twins.
    """
    _claim_version(item, version, statuses=[ItemStatus.IN_REVIEW])
    verdict, content, reason = _review_fields(item, verdict, content, reason)
    now = timezone.now()
    closed = Assignment.objects.filter(
        item=item, reviewer=reviewer, completed_at__isnull=True
    ).update(completed_at=now)
    if not closed:
        if Assignment.objects.filter(item=item, reviewer=reviewer).exists():
            raise DomainError(_("You have already reviewed this item."), code="already_reviewed")
        raise DomainError(_("This item is not assigned to you."), code="not_assigned")
    queue_count_done(reviewer=reviewer, item=item, step=1)
    try:
        with transaction.atomic():
            review = Review.objects.create(
                item=item,
                reviewer=reviewer,
                item_version=version,
                verdict=verdict,
                content=content,
                reason=reason,
                comment=(comment or "").strip(),
                seconds_spent=_seconds(seconds_spent),
                **_pair_fields(pair),
            )
    except IntegrityError as error:
        raise DomainError(_("You have already reviewed this version."), code="duplicate") from error
    status = _settle(item)
    return ReviewOutcome(review=review, status=status, version=item.version)


def _seconds(value) -> float | None:
    if value in (None, ""):
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    # Time on item is a measurement, not a claim: clamp what a paused laptop might report.
    return min(max(seconds, 0.0), 24 * 3600.0)


PAIR_FIELDS = (
    "answerable",
    "realism",
    "severity_judgement",
    "identified_degraded_side",
    "degraded_side",
)


def _pair_fields(pair: dict | None) -> dict:
    values = {key: value for key, value in (pair or {}).items() if key in PAIR_FIELDS}
    realism = values.get("realism")
    if realism is not None and not 1 <= int(realism) <= 5:
        raise DomainError(_("Realism is scored from 1 to 5."))
    return values


def _settle(item: Item) -> str:
    """Apply the agreement rule once every assigned reviewer has submitted this version."""
    if Assignment.objects.filter(item=item, completed_at__isnull=True).exists():
        return ItemStatus.IN_REVIEW
    reviews = list(Review.objects.filter(item=item, item_version=item.version))
    verdicts = {review.verdict for review in reviews}
    if verdicts == {Verdict.ACCEPT}:
        status = ItemStatus.AGREED
    elif verdicts == {Verdict.REJECT}:
        status = ItemStatus.REJECTED
    elif verdicts == {Verdict.EDIT} and len({_key(r.content, item.kind) for r in reviews}) == 1:
        status = ItemStatus.AGREED
        names = ", ".join(sorted(r.reviewer.get_username() for r in reviews))
        _new_revision(
            item,
            _edit_content(reviews[0]),
            reason=RevisionReason.AGREED_EDIT,
            author=reviews[-1].reviewer,
            note=_("Identical edit proposed by %(names)s") % {"names": names},
        )
    else:
        status = ItemStatus.DISPUTED
    item.status = status
    item.save(update_fields=["status", *item_content.CONTENT_FIELDS, "version"])
    return status


def _key(content: dict | None, kind: str) -> str:
    return repr(sorted(content_normalise(content or {}, kind).items()))


# --- adjudication and direct edits ---------------------------------------------------------


def _two_reviews(item: Item) -> tuple[Review | None, Review | None]:
    """Reviews A and B: the reviews of the current version, in assignment-slot order."""
    slots = dict(Assignment.objects.filter(item=item).values_list("reviewer_id", "slot"))
    reviews = sorted(
        Review.objects.filter(item=item, item_version=item.version),
        key=lambda r: (slots.get(r.reviewer_id, 99), r.pk),
    )
    return (reviews[0] if reviews else None, reviews[1] if len(reviews) > 1 else None)


def _check_independent(item: Item, adjudicator) -> None:
    # Whatever roles they hold, a reviewer of the item never settles its dispute, nor anyone
    # still reviewing an item of its case (the case is the unit of blinding).
    if Review.objects.filter(item=item, reviewer=adjudicator).exists():
        raise NotAllowedError(
            _("You reviewed this item: another adjudicator must settle it."), code="own_review"
        )
    if (
        Item.objects.filter(pk=item.pk)
        .filter(visibility.items_not_settled_by(adjudicator))
        .exists()
    ):
        raise NotAllowedError(
            _("You are still reviewing this case: another adjudicator must settle it."),
            code="case_in_review",
        )


@transaction.atomic
def item_adjudicate(
    *,
    item: Item,
    adjudicator,
    choice: str,
    version: int,
    content: dict | None = None,
    reject: bool = False,
    comment: str = "",
) -> Adjudication:
    """Resolve a disputed item: take review A, take B, or write a new version (or reject it).

    Taking a review takes its verdict: an accepted original becomes the adjudicated revision as
    is, an edit becomes it, a rejection rejects the item.
    """
    if choice not in AdjudicationChoice.values:
        raise DomainError(_("The choice must be a, b or new."))
    _check_independent(item, adjudicator)
    _claim_version(item, version, statuses=[ItemStatus.DISPUTED])
    review_a, review_b = _two_reviews(item)
    taken = {"a": review_a, "b": review_b}.get(choice)
    adopted: dict | None = None
    if choice != AdjudicationChoice.NEW:
        if taken is None:
            raise DomainError(_("There is no review %(c)s to take.") % {"c": choice.upper()})
        reject = taken.verdict == Verdict.REJECT
        if not reject:
            edited = taken.verdict == Verdict.EDIT
            chosen = _edit_content(taken) if edited else item.content()
            adopted = content_normalise(chosen, item.kind)
    elif not reject:
        adopted = content_normalise(content_clean(content, item=item), item.kind)
    if adopted is None:
        item.status = ItemStatus.REJECTED
    else:
        _new_revision(
            item,
            adopted,
            reason=RevisionReason.ADJUDICATED,
            author=adjudicator,
            note=(comment or "").strip(),
        )
        item.status = ItemStatus.ADJUDICATED
    item.save(update_fields=["status", *item_content.CONTENT_FIELDS, "version"])
    return Adjudication.objects.create(
        item=item,
        adjudicator=adjudicator,
        choice=choice,
        review_a=review_a,
        review_b=review_b,
        content=adopted,
        rejected=reject,
        comment=(comment or "").strip(),
        item_version=item.version,
    )


EDITABLE_STATUSES = (
    ItemStatus.PENDING,
    ItemStatus.AGREED,
    ItemStatus.ADJUDICATED,
    ItemStatus.REJECTED,
)


@transaction.atomic
def item_edit(*, item: Item, user, version: int, content: dict, note: str = "") -> int:
    """A curator's direct correction: a new revision, never during an open double review."""
    _claim_version(item, version, statuses=EDITABLE_STATUSES)
    content = content_clean(content, item=item)
    new_version = _new_revision(
        item, content, reason=RevisionReason.EDITED, author=user, note=(note or "").strip()
    )
    item.save(update_fields=[*item_content.CONTENT_FIELDS, "version"])
    return new_version
