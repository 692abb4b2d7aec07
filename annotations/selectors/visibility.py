"""Who may see what: the data scope of each role and the blinding rule, decided here only.

Scope. Curators see every benchmark. Reviewers see the benchmarks where they have (or had) an
item or pair assignment or a human-baseline session; adjudicators also those with disputes (open
or settled). Outside their scope nothing exists for a user: every loader here answers 404.

Blinding. While a user has an open assignment on an item, or a running human-baseline session
on its benchmark, they see of that item only what a blinded reviewer may: no other reviewer's
verdict, comment or proposed content, no history, no agreement detail, whatever other roles they
hold. Otherwise an item's reviews are shown to curators, to adjudicators who did not review it,
and to its reviewers once every review is in. The gold answer (and everything that gives it
away: predictions' hits, leaderboards, triage evidence, release files) is hidden from a
clinician with a running human-baseline session on the benchmark.

The scope is applied as a subquery, never as a list of ids, so that every read keeps the same
number of queries whatever the data and the user.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, Exists, OuterRef, Q, QuerySet, Value
from django.db.models.expressions import Combinable
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, has_role, user_roles
from annotations.models import (
    Adjudication,
    Assignment,
    Benchmark,
    Box,
    Case,
    GradingSession,
    Image,
    Item,
    ItemImage,
    ItemStatus,
    Release,
    Review,
    Run,
    RunKind,
    RunStatus,
    Volume,
)
from annotations.scoring.triage import GROUPS
from annotations.scoring.triage.combine import noisy_or

# --- scope ---------------------------------------------------------------------------------


def sees_everything(user: Any) -> bool:
    """Curators' scope is every benchmark (blinding still applies to them)."""
    return has_role(user, CURATOR)


def benchmarks_visible_to(user: Any) -> QuerySet[Benchmark]:
    """The benchmarks in `user`'s scope, as a queryset (usable as a subquery)."""
    if sees_everything(user):
        return Benchmark.objects.all()
    roles = user_roles(user)
    if not roles:
        return Benchmark.objects.none()
    here = OuterRef("pk")
    condition: Q | Combinable = Exists(
        Assignment.objects.filter(reviewer=user, item__benchmark=here)
    ) | Exists(Run.objects.filter(kind=RunKind.HUMAN, human=user, benchmark=here))
    if ADJUDICATOR in roles:
        condition |= Exists(Item.objects.filter(benchmark=here, status=ItemStatus.DISPUTED))
        condition |= Exists(Adjudication.objects.filter(item__benchmark=here))
    return Benchmark.objects.filter(condition)


def in_scope(queryset: QuerySet, user: Any, *, benchmark_path: str = "benchmark") -> QuerySet:
    """`queryset` narrowed to rows whose benchmark (at `benchmark_path`) is in `user`'s scope."""
    if sees_everything(user):
        return queryset
    return queryset.filter(**{f"{benchmark_path}__in": benchmarks_visible_to(user)})


def images_visible_to(user: Any) -> QuerySet[Image]:
    """Images used by an item or a case (endoscopy image) in `user`'s scope."""
    if sees_everything(user):
        return Image.objects.all()
    benchmarks = benchmarks_visible_to(user)
    here = OuterRef("pk")
    return Image.objects.filter(
        Exists(ItemImage.objects.filter(image=here, item__benchmark__in=benchmarks))
        | Exists(Case.objects.filter(endoscopy_image=here, benchmark__in=benchmarks))
    )


def boxes_visible_to(user: Any, queryset: QuerySet[Box] | None = None) -> QuerySet[Box]:
    """Boxes on a volume of a case in scope, or on an image in scope, without those the user
    is blinded to: while they review an item of the case or image, only imported boxes and
    their own; while they answer a human baseline there, only their own."""
    boxes = Box.objects.all() if queryset is None else queryset
    if not sees_everything(user):
        benchmarks = benchmarks_visible_to(user)
        boxes = boxes.filter(
            Q(volume__case__benchmark__in=benchmarks) | Q(image__in=images_visible_to(user))
        )
    return boxes.exclude(_boxes_blinded(user))


def case_box_ids_visible_to(user: Any, case: Case, *, item_blinded: bool = False) -> set[int]:
    """Ids of the boxes of `case` (its volumes and endoscopy image) that `user` may see; with
    `item_blinded` (a page of an item whose other reviews the user may not read) only imported
    boxes and their own, whatever the rest of the case allows."""
    where = Q(volume__case=case)
    if case.endoscopy_image_id is not None:
        where |= Q(image_id=case.endoscopy_image_id)
    boxes = boxes_visible_to(user, Box.objects.filter(where))
    if item_blinded:
        boxes = boxes.filter(Q(source="imported") | Q(author=user))
    return set(boxes.values_list("pk", flat=True))


def _boxes_blinded(user: Any) -> Q | Combinable:
    """Boxes of other people that `user` may not see now (the rule of `boxes_visible_to`).
    The case is the unit of blinding: while an item of a case the user reviews still waits for
    a review (their own or another's: `item_visibility` hides the other reviews until every one
    is in), the others' boxes anywhere in the case stay hidden."""
    awaiting = Assignment.objects.filter(item=OuterRef("pk"), completed_at__isnull=True)
    cases_awaiting = Item.objects.filter(
        Exists(awaiting), assignments__reviewer=user, case__isnull=False
    ).values("case_id")
    blinded_items = Item.objects.filter(items_blinded_for(user) | Q(case__in=cases_awaiting))
    on_case = Exists(blinded_items.filter(case=OuterRef("volume__case")))
    on_image = Exists(
        ItemImage.objects.filter(image=OuterRef("image"), item__in=blinded_items)
    ) | Exists(blinded_items.filter(case__endoscopy_image=OuterRef("image")))
    hidden = on_case | on_image
    if _may_answer_baselines(user):
        sessions = running_baselines(user).values("benchmark_id")
        gold_hidden_here = Q(volume__case__benchmark__in=sessions) | Exists(
            ItemImage.objects.filter(image=OuterRef("image"), item__benchmark__in=sessions)
        )
        # Imported boxes are a localization item's gold: hidden during a baseline too.
        return ~Q(author=user) & ((hidden & ~Q(source="imported")) | gold_hidden_here)
    return ~Q(author=user) & hidden & ~Q(source="imported")


def _get_or_404(queryset: QuerySet, user: Any, benchmark_path: str, **lookup: Any):
    return get_object_or_404(in_scope(queryset, user, benchmark_path=benchmark_path), **lookup)


def get_benchmark_for_user_or_404(
    user: Any, name: str, queryset: QuerySet | None = None
) -> Benchmark:
    queryset = Benchmark.objects.all() if queryset is None else queryset
    return _get_or_404(queryset, user, "pk", name=name)


def get_item_for_user_or_404(user: Any, pk: int, queryset: QuerySet | None = None) -> Item:
    return _get_or_404(
        Item.objects.all() if queryset is None else queryset, user, "benchmark", pk=pk
    )


def pool_item_visible(user: Any, item: Item) -> Item | None:
    """The pool item `item` was drawn as, when the user may see its pool (lineage links)."""
    pool_item = item.pool_item
    if pool_item is None:
        return None
    visible = benchmarks_visible_to(user).filter(pk=pool_item.benchmark_id).exists()
    return pool_item if visible else None


def get_case_for_user_or_404(user: Any, pk: int, queryset: QuerySet | None = None) -> Case:
    return _get_or_404(
        Case.objects.all() if queryset is None else queryset, user, "benchmark", pk=pk
    )


def without_blinded_gold(case: Case) -> Case:
    """The case as a clinician answering a human baseline of its benchmark may read it (a case
    annotated by `with_gold_hidden`): without the TNM stage and the reports, the gold of its
    classification and report items. Pages and the API both read a case through this."""
    if getattr(case, "gold_hidden", False):
        case.tnm, case.reports = "", {}
    return case


def get_volume_for_user_or_404(user: Any, pk: int, queryset: QuerySet | None = None) -> Volume:
    queryset = Volume.objects.all() if queryset is None else queryset
    return _get_or_404(queryset, user, "case__benchmark", pk=pk)


def get_image_for_user_or_404(user: Any, sha256: str) -> Image:
    return get_object_or_404(images_visible_to(user), sha256=sha256)


def get_box_for_user_or_404(user: Any, pk: int, queryset: QuerySet[Box] | None = None) -> Box:
    return get_object_or_404(boxes_visible_to(user, queryset), pk=pk)


def get_run_for_user_or_404(user: Any, pk: int, queryset: QuerySet | None = None) -> Run:
    return _get_or_404(
        Run.objects.all() if queryset is None else queryset, user, "benchmark", pk=pk
    )


def get_release_for_user_or_404(user: Any, pk: int, queryset: QuerySet | None = None) -> Release:
    queryset = Release.objects.all() if queryset is None else queryset
    return _get_or_404(queryset, user, "benchmark", pk=pk)


def gradable_by(queryset: QuerySet, user: Any) -> QuerySet:
    """Grading sessions `user` may grade: those whose curator named them, or named nobody."""
    chosen = GradingSession.graders.through.objects.filter(gradingsession_id=OuterRef("pk"))
    return queryset.filter(~Exists(chosen) | Exists(chosen.filter(user_id=user.pk)))


def get_grading_session_for_user_or_404(
    user: Any, pk: int, queryset: QuerySet | None = None
) -> GradingSession:
    queryset = GradingSession.objects.all() if queryset is None else queryset
    return _get_or_404(queryset, user, "run_a__benchmark", pk=pk)


# --- gold answers --------------------------------------------------------------------------


def running_baselines(user: Any) -> QuerySet[Run]:
    """`user`'s human-baseline sessions still open."""
    return Run.objects.filter(
        kind=RunKind.HUMAN, human=user, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
    )


def _may_answer_baselines(user: Any) -> bool:
    # Only clinicians answer human baselines (services.human_baseline): others need no query.
    return has_role(user, REVIEWER, ADJUDICATOR)


def with_gold_hidden(queryset: QuerySet, user: Any, *, benchmark_path: str) -> QuerySet:
    """`queryset` annotated with `gold_hidden` (the rule of `gold_hidden`, in the same query)."""
    if not _may_answer_baselines(user):
        return queryset.annotate(gold_hidden=Value(False, output_field=BooleanField()))
    sessions = running_baselines(user).filter(benchmark=OuterRef(benchmark_path))
    return queryset.annotate(gold_hidden=Exists(sessions))


def without_gold_hidden(queryset: QuerySet, user: Any, *, benchmark_path: str) -> QuerySet:
    """`queryset` without the rows of benchmarks whose gold is hidden from `user` (queues)."""
    if not _may_answer_baselines(user):
        return queryset
    hidden = running_baselines(user).values("benchmark_id")
    return queryset.exclude(**{f"{benchmark_path}__in": hidden})


def gold_hidden(user: Any, benchmark_id: int) -> bool:
    """True while `user` answers a human baseline of the benchmark: its gold stays hidden."""
    if not _may_answer_baselines(user):
        return False
    return running_baselines(user).filter(benchmark_id=benchmark_id).exists()


def check_gold_visible(user: Any, benchmark_id: int) -> None:
    """403 on a page made of gold answers (predictions' hits, triage evidence, release files,
    leaderboards) while `user` answers a human baseline of the benchmark."""
    if gold_hidden(user, benchmark_id):
        raise PermissionDenied(
            _("Hidden while your human-baseline session on this benchmark is open.")
        )


# --- blinding ------------------------------------------------------------------------------


def items_in_review_by(user: Any) -> QuerySet:
    """Ids of the items `user` has an open assignment on (a subquery)."""
    return Assignment.objects.filter(reviewer=user, completed_at__isnull=True).values("item_id")


def items_blinded_for(user: Any, *, item_path: str = "") -> Q:
    """A filter on items (at `item_path`): those `user` sees only as a blinded reviewer (open
    assignment, or a running human baseline on their benchmark)."""
    prefix = f"{item_path}__" if item_path else ""
    blinded = Q(**{f"{item_path or 'pk'}__in": items_in_review_by(user)})
    if _may_answer_baselines(user):
        sessions = running_baselines(user).values("benchmark_id")
        blinded |= Q(**{f"{prefix}benchmark__in": sessions})
    return blinded


# --- who settles what ----------------------------------------------------------------------

# An item is still under review while it is in review or disputed: its reviews are not settled.
OPEN_REVIEW_STATUSES = (ItemStatus.IN_REVIEW, ItemStatus.DISPUTED)


def cases_in_review_by(user: Any) -> QuerySet:
    """Ids of the cases where `user` has an open review (an assignment on one of its items
    not yet settled), as a subquery. The case is the unit of blinding: such a person settles
    nothing in it, neither items nor boxes."""
    return Assignment.objects.filter(
        reviewer=user, item__status__in=OPEN_REVIEW_STATUSES, item__case__isnull=False
    ).values("item__case_id")


def items_not_settled_by(user: Any) -> Q | Combinable:
    """A filter on items that `user` may not settle: one they reviewed (any version), or one
    of a case where they have an open review. The one rule of adjudication, for items and for
    boxes (services.review, services.boxes, the adjudication queue)."""
    return Exists(Review.objects.filter(item=OuterRef("pk"), reviewer=user)) | Q(
        case__in=cases_in_review_by(user)
    )


@dataclass(frozen=True)
class ItemVisibility:
    """What a user may see of one item besides its content."""

    reviewing: bool  # the user has an open assignment on the item
    gold: bool  # the gold answer may be shown
    reviews: bool  # other reviews (verdict, comment, content), the history, agreement detail

    @property
    def blinded(self) -> bool:
        return self.reviewing or not self.gold


def item_visibility(
    user: Any, item: Item, *, assignments: Iterable[tuple[int, Any]] | None = None
) -> ItemVisibility:
    """The blinding rule for one item. `assignments` are the item's (reviewer_id,
    completed_at) when the caller has them; the gold comes from `item.gold_hidden` when the item
    was loaded `with_gold_hidden`. Two queries at most, none with both."""
    if assignments is None:
        assignments = Assignment.objects.filter(item=item).values_list(
            "reviewer_id", "completed_at"
        )
    mine: list[bool] = []
    every_review_in = True
    for reviewer_id, completed_at in assignments:
        if reviewer_id == user.pk:
            mine.append(completed_at is not None)
        every_review_in &= completed_at is not None
    reviewing = not all(mine)
    hidden = getattr(item, "gold_hidden", None)
    gold = not (gold_hidden(user, item.benchmark_id) if hidden is None else hidden)
    if reviewing or not gold:
        reviews = False
    elif has_role(user, CURATOR) or (has_role(user, ADJUDICATOR) and not mine):
        reviews = True
    else:
        # An item's own reviewer, whatever other role they hold: once every review is in.
        reviews = bool(mine) and every_review_in
    return ItemVisibility(reviewing=reviewing, gold=gold, reviews=reviews)


def reviews_visible(user: Any, item: Item) -> bool:
    return item_visibility(user, item).reviews


def check_reviews_visible(
    user: Any, item: Item, *, assignments: Iterable[tuple[int, Any]] | None = None
) -> ItemVisibility:
    """403 unless `user` may read the item's reviews and history; the visibility otherwise."""
    visibility = item_visibility(user, item, assignments=assignments)
    if not visibility.reviews:
        if visibility.reviewing:
            message = _("The other reviews stay hidden until you submit your own review.")
        elif not visibility.gold:
            message = _("Hidden while your human-baseline session on this benchmark is open.")
        else:
            message = _("Reviews stay hidden until every review of this item is in.")
        raise PermissionDenied(message)
    return visibility


# Triage reasons read from the item's reviews (other reviewers' verdicts and times).
REVIEW_REASON_CODES = frozenset(GROUPS["reviews"])


def redact_review_reasons(suspicions: Iterable) -> None:
    """Drop the review-derived reasons of the suspects the viewer is reviewing (annotated
    `viewer_reviewing` by selectors.triage); their score becomes that of the reasons left."""
    for suspicion in suspicions:
        if not getattr(suspicion, "viewer_reviewing", False):
            continue
        kept = [r for r in suspicion.reasons if r.get("code") not in REVIEW_REASON_CODES]
        if len(kept) != len(suspicion.reasons):
            suspicion.reasons = kept
            suspicion.score = noisy_or(r.get("weight", 0.0) for r in kept)
