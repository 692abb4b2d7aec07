"""Review API: queue, items, blinded reviews, adjudication, assignments, agreement."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, ROLES, HasRole
from annotations.models import AdjudicationChoice, Benchmark, Item, RejectReason, Verdict
from annotations.selectors import review as selectors
from annotations.selectors import visibility
from annotations.services import review as services
from annotations.services.agreement import benchmark_agreement, finite
from annotations.services.review_changes import review_change, review_withdraw

ERROR = inline_serializer(
    "ReviewError",
    {
        "detail": serializers.CharField(),
        "code": serializers.CharField(),
        "current_version": serializers.IntegerField(required=False, allow_null=True),
    },
)


class ContentSerializer(serializers.Serializer):
    question = serializers.CharField()
    hint = serializers.CharField(required=False, allow_blank=True)
    options = serializers.ListField(child=serializers.CharField(allow_blank=True), min_length=2)
    answer = serializers.CharField(max_length=1)


class DecisionContentSerializer(serializers.Serializer):
    """A proposed content of any item kind, as the review and adjudication pages send it: the
    question, options and answer letter of a multiple-choice item; the label (`answer`) of a
    classification item; the `reference` of a report; the `voxel` (3D) or `box` (2D, pixels)
    of a box. The service checks it against the item's kind (services.item_content)."""

    question = serializers.CharField(required=False, allow_blank=True)
    hint = serializers.CharField(required=False, allow_blank=True)
    options = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    answer = serializers.CharField(
        required=False, allow_blank=True, max_length=100, help_text="option letter, or label"
    )
    reference = serializers.CharField(required=False, allow_blank=True)
    voxel = serializers.ListField(
        child=serializers.IntegerField(), min_length=6, max_length=6, required=False
    )
    box = serializers.ListField(
        child=serializers.IntegerField(), min_length=4, max_length=4, required=False
    )


class ItemOutput(serializers.Serializer):
    id = serializers.IntegerField()
    benchmark = serializers.CharField(source="benchmark.name")
    index = serializers.IntegerField(source="source_index")
    question = serializers.CharField()
    hint = serializers.CharField()
    options = serializers.ListField(child=serializers.CharField(allow_blank=True))
    answer = serializers.SerializerMethodField()
    taxonomy = serializers.SerializerMethodField()
    status = serializers.CharField()
    version = serializers.IntegerField()
    images = serializers.SerializerMethodField()

    @extend_schema_field(
        serializers.CharField(
            allow_null=True, help_text="null while my human-baseline session on it is open"
        )
    )
    def get_answer(self, item: Item) -> str | None:
        return None if item.gold_hidden else item.answer

    def get_taxonomy(self, item: Item) -> dict[str, str]:
        return item.taxonomy()

    def get_images(self, item: Item) -> list[str]:
        return [reverse("image", args=[link.image.sha256]) for link in item.item_images.all()]


def _item(user, pk: int) -> Item:
    """The item in `user`'s scope (404 otherwise), annotated with `gold_hidden`."""
    queryset = Item.objects.select_related("benchmark").prefetch_related(selectors.IMAGES)
    queryset = visibility.with_gold_hidden(queryset, user, benchmark_path="benchmark")
    return visibility.get_item_for_user_or_404(user, pk, queryset)


class QueueNextApi(APIView):
    """The next item assigned to me for review; 204 when my queue is empty."""

    permission_classes = [HasRole.of(REVIEWER)]

    @extend_schema(responses={200: ItemOutput, 204: OpenApiResponse(description="Queue empty")})
    def get(self, request):
        assignment = selectors.queue_next(request.user)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(ItemOutput(_item(request.user, assignment.item_id)).data)


class ItemDetailApi(APIView):
    """GET: an item's content, status and version (never its reviews; its answer is null while
    my human-baseline session on its benchmark is open). PATCH (curators): a direct correction
    of the version you saw, saved as a new revision; 409 if it changed."""

    class InputSerializer(serializers.Serializer):
        version = serializers.IntegerField(min_value=1)
        content = ContentSerializer()
        note = serializers.CharField(required=False, allow_blank=True, max_length=500)

    def get_permissions(self):
        roles = (CURATOR,) if self.request.method == "PATCH" else ROLES
        return [HasRole.of(*roles)()]

    @extend_schema(responses=ItemOutput)
    def get(self, request, pk: int):
        return Response(ItemOutput(_item(request.user, pk)).data)

    @extend_schema(request=InputSerializer, responses={200: ItemOutput, 400: ERROR, 409: ERROR})
    def patch(self, request, pk: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.item_edit(item=_item(request.user, pk), user=request.user, **data.validated_data)
        return Response(ItemOutput(_item(request.user, pk)).data)


class ReviewOutput(serializers.Serializer):
    id = serializers.IntegerField()
    reviewer = serializers.CharField(source="reviewer.username")
    item_version = serializers.IntegerField()
    verdict = serializers.CharField()
    content = ContentSerializer(allow_null=True)
    reason = serializers.CharField()
    comment = serializers.CharField()
    seconds_spent = serializers.FloatField(allow_null=True)
    created_at = serializers.DateTimeField()


class ItemReviewsApi(APIView):
    """GET: the item's reviews, to whom they are visible (selectors.visibility: never while I
    review the item; adjudicators who did not review it, curators, or its reviewers once all
    reviews are in). POST: my review of the item version I saw."""

    class InputSerializer(serializers.Serializer):
        verdict = serializers.ChoiceField(choices=Verdict.choices)
        version = serializers.IntegerField(min_value=1)
        content = DecisionContentSerializer(required=False, allow_null=True)
        reason = serializers.ChoiceField(
            choices=RejectReason.choices, required=False, allow_blank=True
        )
        comment = serializers.CharField(required=False, allow_blank=True)
        seconds_spent = serializers.FloatField(required=False, allow_null=True, min_value=0)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        verdict = serializers.CharField()
        item_status = serializers.CharField()
        item_version = serializers.IntegerField()

    def get_permissions(self):
        roles = (REVIEWER,) if self.request.method == "POST" else ROLES
        return [HasRole.of(*roles)()]

    @extend_schema(responses={200: ReviewOutput(many=True), 403: ERROR})
    def get(self, request, pk: int):
        items = visibility.with_gold_hidden(
            Item.objects.all(), request.user, benchmark_path="benchmark"
        )
        item = visibility.get_item_for_user_or_404(request.user, pk, items)
        visibility.check_reviews_visible(request.user, item)
        return Response(ReviewOutput(selectors.item_reviews(item), many=True).data)

    @extend_schema(
        request=InputSerializer,
        responses={201: OutputSerializer, 400: ERROR, 409: ERROR},
    )
    def post(self, request, pk: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = visibility.get_item_for_user_or_404(
            request.user, pk, Item.objects.select_related("benchmark")
        )
        outcome = services.review_submit(item=item, reviewer=request.user, **data.validated_data)
        body = {
            "id": outcome.review.pk,
            "verdict": outcome.review.verdict,
            "item_status": outcome.status,
            "item_version": outcome.version,
        }
        return Response(self.OutputSerializer(body).data, status=status.HTTP_201_CREATED)


class ItemReviewMineApi(APIView):
    """PUT: change my verdict; DELETE (`?version=N`): withdraw it. Both only until another
    review of the item is in (then 403); the earlier verdict stays in the item's history."""

    permission_classes = [HasRole.of(REVIEWER)]

    @extend_schema(
        request=ItemReviewsApi.InputSerializer,
        responses={200: ItemReviewsApi.OutputSerializer, 400: ERROR, 403: ERROR, 409: ERROR},
    )
    def put(self, request, pk: int):
        data = ItemReviewsApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = visibility.get_item_for_user_or_404(
            request.user, pk, Item.objects.select_related("benchmark")
        )
        outcome = review_change(item=item, reviewer=request.user, **data.validated_data)
        body = {
            "id": outcome.review.pk,
            "verdict": outcome.review.verdict,
            "item_status": outcome.status,
            "item_version": outcome.version,
        }
        return Response(ItemReviewsApi.OutputSerializer(body).data)

    @extend_schema(
        parameters=[OpenApiParameter("version", int, required=True)],
        responses={204: None, 400: ERROR, 403: ERROR, 409: ERROR},
    )
    def delete(self, request, pk: int):
        version = serializers.IntegerField(min_value=1).run_validation(
            request.query_params.get("version")
        )
        item = visibility.get_item_for_user_or_404(request.user, pk)
        review_withdraw(item=item, reviewer=request.user, version=version)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ItemAdjudicationApi(APIView):
    """Resolve a disputed item: take review a or b, or write a new version (or reject it).
    An item's reviewers never adjudicate it (403), whatever their roles."""

    permission_classes = [HasRole.of(ADJUDICATOR)]

    class InputSerializer(serializers.Serializer):
        choice = serializers.ChoiceField(choices=AdjudicationChoice.choices)
        version = serializers.IntegerField(min_value=1)
        content = DecisionContentSerializer(required=False, allow_null=True)
        reject = serializers.BooleanField(required=False, default=False)
        comment = serializers.CharField(required=False, allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        choice = serializers.CharField()
        rejected = serializers.BooleanField()
        item_status = serializers.CharField(source="item.status")
        item_version = serializers.IntegerField()

    @extend_schema(
        request=InputSerializer,
        responses={201: OutputSerializer, 400: ERROR, 403: ERROR, 409: ERROR},
    )
    def post(self, request, pk: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = visibility.get_item_for_user_or_404(
            request.user, pk, Item.objects.select_related("benchmark")
        )
        adjudication = services.item_adjudicate(
            item=item, adjudicator=request.user, **data.validated_data
        )
        return Response(self.OutputSerializer(adjudication).data, status=status.HTTP_201_CREATED)


class BenchmarkAssignmentsApi(APIView):
    """Assign the benchmark (or a filtered part) for double review, balanced across reviewers."""

    permission_classes = [HasRole.of(CURATOR)]

    class InputSerializer(serializers.Serializer):
        reviewers = serializers.ListField(child=serializers.CharField(), min_length=1)
        per_item = serializers.IntegerField(min_value=1, max_value=services.MAX_PER_ITEM, default=2)
        filters = serializers.DictField(child=serializers.CharField(), required=False)

    class OutputSerializer(serializers.Serializer):
        created = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, 400: ERROR})
    def post(self, request, name: str):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        benchmark = get_object_or_404(Benchmark, name=name)
        created = services.assignments_create(
            benchmark=benchmark,
            reviewers=services.reviewers_by_username(data.validated_data["reviewers"]),
            per_item=data.validated_data["per_item"],
            filters=data.validated_data.get("filters"),
            assigned_by=request.user,
        )
        return Response(self.OutputSerializer({"created": created}).data, status=201)


class StatsSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    percent = serializers.FloatField(allow_null=True)
    alpha = serializers.FloatField(allow_null=True)
    warning = serializers.BooleanField()


class BenchmarkAgreementApi(APIView):
    """Percent agreement, Cohen's kappa per reviewer pair and Krippendorff's alpha on verdicts."""

    permission_classes = [HasRole.of(CURATOR, ADJUDICATOR)]

    class OutputSerializer(serializers.Serializer):
        benchmark = serializers.CharField()
        overall = StatsSerializer()
        pairs = inline_serializer(
            "AgreementPair",
            {
                "reviewer_a": serializers.CharField(),
                "reviewer_b": serializers.CharField(),
                "n": serializers.IntegerField(),
                "percent": serializers.FloatField(allow_null=True),
                "kappa": serializers.FloatField(allow_null=True),
                "warning": serializers.BooleanField(),
            },
            many=True,
        )
        by_field = serializers.DictField(child=serializers.DictField(child=StatsSerializer()))

    @extend_schema(responses=OutputSerializer)
    def get(self, request, name: str):
        benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
        visibility.check_gold_visible(request.user, benchmark.pk)
        report = benchmark_agreement(benchmark=benchmark, viewer=request.user)
        body = {
            "benchmark": report.benchmark,
            "overall": _stats(report.overall),
            "pairs": [
                {
                    **_stats(p),
                    "reviewer_a": p.reviewer_a,
                    "reviewer_b": p.reviewer_b,
                    "kappa": finite(p.kappa),
                }
                for p in report.pairs
            ],
            "by_field": {
                field: {value: _stats(s) for value, s in values.items()}
                for field, values in report.by_field.items()
            },
        }
        return Response(self.OutputSerializer(body).data)


def _stats(stats) -> dict:
    return {
        "n": stats.n,
        "percent": finite(stats.percent),
        "alpha": finite(getattr(stats, "alpha", float("nan"))),
        "warning": stats.warning,
    }
