"""Reads of the review workflow: queues, the review page, history, agreement labels.

Every function here runs a fixed number of queries whatever the benchmark size (the review page
and the queue are pinned by tests with 3 and 30 items).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    Expression,
    ExpressionWrapper,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _

from annotations.access import ADJUDICATOR, REVIEWER
from annotations.models import (
    TAXONOMY_FIELDS,
    Adjudication,
    Assignment,
    Benchmark,
    Item,
    ItemImage,
    ItemKind,
    ItemRevision,
    ItemStatus,
    Prediction,
    QueueCount,
    Review,
    ReviewChange,
    Run,
)
from annotations.selectors import visibility
from annotations.selectors.triage import order_queue_by_suspicion
from annotations.selectors.visibility import reviews_visible

__all__ = ["reviews_visible"]  # the blinding rule lives in selectors.visibility

IMAGES = Prefetch("item_images", queryset=ItemImage.objects.select_related("image"))


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 0.0


def open_assignments(user) -> QuerySet:
    """The reviewer's assignments still to do. Items of a benchmark whose human baseline the
    reviewer is answering wait until the session ends (reviewing shows the gold answer)."""
    rows = Assignment.objects.filter(
        reviewer=user, completed_at__isnull=True, item__status=ItemStatus.IN_REVIEW
    )
    return visibility.without_gold_hidden(rows, user, benchmark_path="item__benchmark")


class AfterInQueue(Expression):
    """Assignments after assignment `pk` in queue order: `(rank, id) > (its rank, its id)`.

    A row comparison, so that both databases read it as one range of the open-queue index
    (reviewer, pair, rank, id) rather than scanning from the head of the queue.
    """

    conditional = True
    output_field = BooleanField()

    def __init__(self, pk: int) -> None:
        super().__init__()
        self.pk = pk

    def as_sql(self, compiler, connection):
        name = connection.ops.quote_name
        table = name(Assignment._meta.db_table)
        rank, key = name("rank"), name("id")
        sql = f"({table}.{rank}, {table}.{key}) > (SELECT {rank}, {key} FROM {table} WHERE {key} = %s)"
        return sql, [self.pk]


def next_in_queue(open_rows: QuerySet, *, after: int | None = None) -> Assignment | None:
    """The open assignment after assignment `after` in queue order, wrapping round to the first.

    Queue order is by assignment, except in benchmarks whose curator switched on "review the
    suspects first": there the most suspect items come first (triage). One query when a next
    item follows `after`.
    """
    ordered = order_queue_by_suspicion(open_rows)
    if after is not None:
        following = ordered.filter(AfterInQueue(after)).first()
        if following is not None:
            return following
    return ordered.first()


def queue_next(user, *, after: int | None = None) -> Assignment | None:
    """The reviewer's next item to review (degraded twins go to the pair review page)."""
    return next_in_queue(open_assignments(user).filter(pair=False), after=after)


def queue_counts(user, *, pair: bool) -> Progress:
    """The reviewer's progress from the counts the services keep (no count of the queue)."""
    row = QueueCount.objects.filter(reviewer=user, pair=pair).values_list("done", "total").first()
    return Progress(done=row[0], total=row[1]) if row else Progress(done=0, total=0)


def queue_progress(user) -> Progress:
    """Item assignments the reviewer has completed, out of all given to them (pairs apart)."""
    return queue_counts(user, pair=False)


@dataclass
class ReviewPage:
    item: Item
    assignment: Assignment
    review: Review | None  # the viewer's own review, if any
    progress: Progress
    can_change: bool = False  # my review may still change: no other review of it is in


def review_page(user, pk: int) -> ReviewPage:
    """An item assigned to `user`, with its images and the user's own review: 404 otherwise;
    403 while the user answers a human baseline of its benchmark (the page shows the gold).

    Only the viewer's own review is loaded, never another reviewer's (blinding): whether any
    other review of this version is in comes as one boolean, in the same query.
    """
    others_in = Review.objects.filter(
        item=OuterRef("item_id"), item_version=OuterRef("item__version")
    ).exclude(reviewer=user)
    rows = visibility.with_gold_hidden(
        Assignment.objects.all(), user, benchmark_path="item__benchmark"
    )
    assignment = get_object_or_404(
        rows.select_related("item__benchmark")
        .annotate(others_in=Exists(others_in))
        .prefetch_related(
            Prefetch("item__item_images", queryset=ItemImage.objects.select_related("image")),
            Prefetch(
                "item__reviews",
                queryset=Review.objects.filter(reviewer=user).order_by("-id"),
                to_attr="own_reviews",
            ),
        ),
        item_id=pk,
        reviewer=user,
    )
    if assignment.gold_hidden:
        raise PermissionDenied(_("Review this item once your human-baseline session is over."))
    item = assignment.item
    own = item.own_reviews[0] if item.own_reviews else None
    can_change = (
        own is not None
        and own.item_version == item.version
        and item.status == ItemStatus.IN_REVIEW
        and not assignment.others_in
    )
    return ReviewPage(
        item=item,
        assignment=assignment,
        review=own,
        progress=queue_progress(user),
        can_change=can_change,
    )


def item_reviews(item: Item, *, slots: dict[int, int] | None = None) -> list[Review]:
    """The item's reviews, oldest first, with reviewer and slot (A/B order per version);
    `slots` (reviewer id → slot) when the caller has read them."""
    if slots is None:
        slots = dict(Assignment.objects.filter(item=item).values_list("reviewer_id", "slot"))
    reviews = list(Review.objects.filter(item=item).select_related("reviewer"))
    for review in reviews:
        review.slot = slots.get(review.reviewer_id)
    return sorted(reviews, key=lambda r: (r.item_version, r.slot or 99, r.pk))


def _disputed(user) -> QuerySet:
    """Disputed items in `user`'s scope that they may see unblinded (selectors.visibility)."""
    disputed = visibility.in_scope(Item.objects.filter(status=ItemStatus.DISPUTED), user)
    return (
        disputed.exclude(visibility.items_blinded_for(user))
        .select_related("benchmark")
        .order_by("updated_at", "id")
    )


def adjudication_queue(user) -> QuerySet:
    """Disputed items `user` may settle (never one they reviewed, nor one of a case they are
    still reviewing), oldest dispute first."""
    return _disputed(user).exclude(visibility.items_not_settled_by(user))


def adjudication_overview(user) -> QuerySet:
    """Every disputed item `user` may see, each with `reviewed_by_me`: those another
    adjudicator must settle (they reviewed it, or still review an item of its case)."""
    return _disputed(user).annotate(
        reviewed_by_me=ExpressionWrapper(
            visibility.items_not_settled_by(user), output_field=BooleanField()
        )
    )


def review_may_change(user, item: Item) -> bool:
    """Whether `user`'s review of the item's version may still change: no other review is in."""
    if item.status != ItemStatus.IN_REVIEW:
        return False
    reviews = Review.objects.filter(item=item, item_version=item.version)
    return reviews.filter(reviewer=user).exists() and not reviews.exclude(reviewer=user).exists()


def why_not_settled_by(user, item: Item) -> str:
    """ "own_review" if `user` reviewed `item` (any version), "case_in_review" if they still
    review an item of its case, else "": the first two may not adjudicate it (nor see its
    reviews)."""
    found = (
        Item.objects.filter(pk=item.pk)
        .annotate(
            own=Exists(Review.objects.filter(item=OuterRef("pk"), reviewer=user)),
            barred=ExpressionWrapper(
                visibility.items_not_settled_by(user), output_field=BooleanField()
            ),
        )
        .values_list("own", "barred")
        .first()
    )
    if found is None or not found[1]:
        return ""
    return "own_review" if found[0] else "case_in_review"


@dataclass
class AdjudicationPage:
    item: Item
    review_a: Review | None
    review_b: Review | None
    remaining: int


def adjudication_page(user, pk: int) -> AdjudicationPage:
    """A disputed item with its two reviews: 404 outside `user`'s scope, 403 while the item's
    reviews are hidden from them (blinding)."""
    # A degraded twin is adjudicated beside its clean image, as it was reviewed.
    items = Item.objects.select_related("benchmark", "clean_twin").prefetch_related(
        IMAGES,
        Prefetch("clean_twin__item_images", queryset=ItemImage.objects.select_related("image")),
    )
    visible = visibility.with_gold_hidden(items, user, benchmark_path="benchmark")
    item = visibility.get_item_for_user_or_404(user, pk, visible)
    rows = list(
        Assignment.objects.filter(item=item).values_list("reviewer_id", "slot", "completed_at")
    )
    assignments = [(reviewer, completed_at) for reviewer, _slot, completed_at in rows]
    visibility.check_reviews_visible(user, item, assignments=assignments)
    slots = {reviewer: slot for reviewer, slot, _completed_at in rows}
    current = [r for r in item_reviews(item, slots=slots) if r.item_version == item.version]
    remaining = adjudication_queue(user).count()
    return AdjudicationPage(
        item=item,
        review_a=current[0] if current else None,
        review_b=current[1] if len(current) > 1 else None,
        remaining=remaining,
    )


@dataclass
class HistoryEvent:
    at: datetime
    kind: str  # assigned / review / review_change / revision / adjudication
    who: str
    obj: object = None
    extra: dict = field(default_factory=dict)


def item_history(item: Item) -> list[HistoryEvent]:
    """The item's lineage in time order: revisions, assignments, reviews, adjudications."""
    events: list[HistoryEvent] = []
    for revision in ItemRevision.objects.filter(item=item).select_related("author"):
        events.append(
            HistoryEvent(revision.created_at, "revision", _name(revision.author), revision)
        )
    for row in Assignment.objects.filter(item=item).select_related("reviewer", "assigned_by"):
        extra = {"reviewer": row.reviewer.get_username()}
        events.append(HistoryEvent(row.created_at, "assigned", _name(row.assigned_by), row, extra))
    for review in item_reviews(item):
        events.append(HistoryEvent(review.created_at, "review", _name(review.reviewer), review))
    for adjudication in Adjudication.objects.filter(item=item).select_related("adjudicator"):
        events.append(
            HistoryEvent(
                adjudication.created_at,
                "adjudication",
                _name(adjudication.adjudicator),
                adjudication,
            )
        )
    for change in ReviewChange.objects.filter(item=item).select_related("reviewer"):
        events.append(
            HistoryEvent(change.created_at, "review_change", _name(change.reviewer), change)
        )
    order = {"revision": 0, "assigned": 1, "review": 2, "review_change": 2, "adjudication": 3}
    return sorted(events, key=lambda e: (e.at, order[e.kind]))


def _name(user) -> str:
    return user.get_username() if user is not None else ""


@dataclass(frozen=True)
class ReviewLabel:
    item_id: int
    item_version: int
    reviewer: str
    verdict: str
    taxonomy: dict[str, str]


def agreement_labels(benchmark: Benchmark, *, viewer=None) -> list[ReviewLabel]:
    """Every review verdict of the benchmark with its item's taxonomy, in one query; without
    the items `viewer` may only see blinded (they are reviewing them)."""
    reviews = Review.objects.filter(item__benchmark=benchmark)
    if viewer is not None:
        reviews = reviews.exclude(visibility.items_blinded_for(viewer, item_path="item"))
    rows = reviews.values_list(
        "item_id",
        "item_version",
        "reviewer__username",
        "verdict",
        *(f"item__{name}" for name in TAXONOMY_FIELDS),
    )
    return [
        ReviewLabel(
            item_id=row[0],
            item_version=row[1],
            reviewer=row[2],
            verdict=row[3],
            taxonomy={
                name: value for name, value in zip(TAXONOMY_FIELDS, row[4:], strict=True) if value
            },
        )
        for row in rows.order_by()
    ]


def reviewer_choices() -> list:
    """Users with the reviewer role, each with `open_count` (open assignments), by name."""
    users = (
        get_user_model()
        .objects.filter(Q(groups__name=REVIEWER) | Q(is_superuser=True))
        .distinct()
        .annotate(
            open_count=Count(
                "assignments", filter=Q(assignments__completed_at__isnull=True), distinct=True
            )
        )
        .order_by("username")
    )
    return list(users)


def clinician_choices() -> list:
    """Users who can answer a human baseline: reviewers and adjudicators."""
    return list(
        get_user_model()
        .objects.filter(groups__name__in=[REVIEWER, ADJUDICATOR])
        .distinct()
        .order_by("username")
    )


def benchmark_status_counts(benchmark: Benchmark) -> dict[str, int]:
    rows = Item.objects.filter(benchmark=benchmark).values("status").annotate(n=Count("id"))
    return {row["status"]: row["n"] for row in rows.order_by()}


BASELINE_FILTERS = ("status", "category", "split", "task", "scene", "modality")


# The kinds a clinician answers in a human baseline: a choice among options or among the
# benchmark's labels (services.human_baseline says why the other kinds are left out).
BASELINE_KINDS = (ItemKind.MCQ, ItemKind.LABEL)


def _baseline_selection(run: Run, *, with_ids: bool = True) -> QuerySet:
    items = Item.objects.filter(benchmark_id=run.benchmark_id).exclude(status=ItemStatus.REJECTED)
    for name, value in (run.filters or {}).items():
        if name in BASELINE_FILTERS and value:
            items = items.filter(**{name: value})
    ids = (run.filters or {}).get("item_ids")
    if ids and with_ids:
        items = items.filter(pk__in=ids)
    return items


def baseline_items(run: Run) -> QuerySet:
    """The items of a human-baseline run, in a fixed order (rejected items never count, nor
    items of a kind a baseline does not ask)."""
    return _baseline_selection(run).filter(kind__in=BASELINE_KINDS).order_by("source_index")


def baseline_left_out(run: Run) -> dict[str, int]:
    """How many items of the session's selection (its filters; a limited session's ids hold
    only answerable items) are of a kind a baseline does not ask, by kind."""
    rows = (
        _baseline_selection(run, with_ids=False)
        .exclude(kind__in=BASELINE_KINDS)
        .order_by("kind")
        .values_list("kind")
        .annotate(n=Count("pk"))
    )
    return dict(rows)


def next_baseline_item(run: Run) -> Item | None:
    """The first item of the session the clinician has not answered yet.

    Looked for after the last answer first, so that the query reads from there in the index
    (benchmark, source_index) rather than skipping every answered item; from the start when
    nothing follows (the first item, or items left behind by answers given out of order).
    """
    following = baseline_queue(run, after_last=True).first()
    return following if following is not None else baseline_queue(run).first()


def baseline_queue(run: Run, *, after_last: bool = False) -> QuerySet:
    """The session's unanswered items in order (after its last answer, if `after_last`)."""
    answered = Prediction.objects.filter(run=run, item_id=OuterRef("pk"))
    items = (
        baseline_items(run)
        .exclude(Exists(answered))
        .select_related("benchmark")
        .prefetch_related(IMAGES)
    )
    if after_last:
        last = Prediction.objects.filter(run=run).order_by("-id").values("item__source_index")
        items = items.filter(source_index__gt=Subquery(last[:1]))
    return items


def baseline_progress(run: Run) -> tuple[int, int]:
    """(answered, total) over the session's still-reviewable items: an item rejected during the
    session leaves both, so the session ends when each item still in it is answered."""
    answered = Prediction.objects.filter(run=run).values("item_id")
    counts = baseline_items(run).aggregate(
        total=Count("pk"), answered=Count("pk", filter=Q(pk__in=answered))
    )
    return counts["answered"], counts["total"]


def baseline_session(user, pk: int) -> Run:
    """A human-baseline run of `user`'s: another clinician's session does not exist for them
    (404), as an unknown one."""
    run = get_object_or_404(Run.objects.select_related("benchmark"), pk=pk, kind="human")
    if run.human_id != user.pk:
        raise Http404
    return run


def baseline_sessions(user) -> QuerySet:
    """Human-baseline runs answered by `user`, open ones first."""
    return (
        Run.objects.filter(kind="human", human=user)
        .select_related("benchmark")
        .order_by("finished_at", "-created_at")
    )


def baseline_runs() -> QuerySet:
    return Run.objects.filter(kind="human").select_related("benchmark", "human")
