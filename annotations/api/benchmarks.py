"""A benchmark's items and cases, for scripts: paginated, filtered, under the visibility rules."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.exceptions import ValidationError

from annotations import selectors
from annotations.access import ROLES, HasRole
from annotations.models import Benchmark, Family, Item, ItemKind, ItemStatus
from annotations.models.item import TAXONOMY_FIELDS
from annotations.selectors import visibility
from annotations.selectors.cases import gastricx_cases

HIDDEN = "null while my human-baseline session on this benchmark is open"


class ItemListOutput(serializers.Serializer):
    id = serializers.IntegerField()
    index = serializers.IntegerField(source="source_index")
    kind = serializers.CharField()
    question = serializers.CharField()
    hint = serializers.CharField()
    options = serializers.ListField(child=serializers.CharField(allow_blank=True))
    answer = serializers.SerializerMethodField()
    reference = serializers.SerializerMethodField()
    target = serializers.SerializerMethodField()
    taxonomy = serializers.SerializerMethodField()
    status = serializers.CharField()
    version = serializers.IntegerField()
    case = serializers.IntegerField(source="case_id", allow_null=True)
    images = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(allow_null=True, help_text=HIDDEN))
    def get_answer(self, item: Item) -> str | None:
        return None if item.gold_hidden else item.answer

    @extend_schema_field(serializers.CharField(allow_null=True, help_text=HIDDEN))
    def get_reference(self, item: Item) -> str | None:
        return None if item.gold_hidden else item.reference

    @extend_schema_field(
        serializers.DictField(allow_null=True, help_text=f"what a kind needs; {HIDDEN}")
    )
    def get_target(self, item: Item) -> dict | None:
        # A box item's target is its gold box; a label item's field is harmless but goes too.
        return None if item.gold_hidden else item.target

    def get_taxonomy(self, item: Item) -> dict[str, str]:
        return item.taxonomy()

    def get_images(self, item: Item) -> list[str]:
        return [reverse("image", args=[link.image.sha256]) for link in item.item_images.all()]

    def get_url(self, item: Item) -> str:
        return reverse("api-item", args=[item.pk])


class ItemFilters(serializers.Serializer):
    status = serializers.ChoiceField(choices=ItemStatus.choices, required=False)
    kind = serializers.ChoiceField(choices=ItemKind.choices, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in TAXONOMY_FIELDS:
            self.fields[name] = serializers.CharField(required=False, max_length=200)


FILTER_PARAMETERS = [
    OpenApiParameter("status", enum=ItemStatus.values, description="review status"),
    OpenApiParameter("kind", enum=ItemKind.values, description="item kind"),
    *[
        OpenApiParameter(name, str, description="equal to this taxonomy value")
        for name in TAXONOMY_FIELDS
    ],
]


class BenchmarkItemListApi(generics.ListAPIView):
    """The items of a benchmark in my scope, by index, `limit`/`offset` paginated. Filters:
    status, kind and each taxonomy field (equal values). The answer, reference and target are
    null while my human-baseline session on the benchmark is open; reviews are never listed."""

    permission_classes = [HasRole.of(*ROLES)]
    serializer_class = ItemListOutput

    def get_queryset(self):
        benchmark = visibility.get_benchmark_for_user_or_404(self.request.user, self.kwargs["name"])
        filters = ItemFilters(data=self.request.query_params)
        if not filters.is_valid():
            raise ValidationError(filters.errors)
        return selectors.item_list(self.request.user, benchmark, filters.validated_data)

    @extend_schema(parameters=FILTER_PARAMETERS)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class CaseListOutput(serializers.Serializer):
    id = serializers.IntegerField()
    case_id = serializers.CharField()
    tnm = serializers.SerializerMethodField()
    endoscopy_image = serializers.CharField(source="endoscopy_image.sha256", allow_null=True)
    volumes = serializers.IntegerField(source="n_volumes")
    items = serializers.IntegerField(source="n_items")
    curated_items = serializers.IntegerField(source="n_curated")
    boxes = serializers.IntegerField(source="n_boxes", help_text="not rejected")
    url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.CharField(allow_null=True, help_text=HIDDEN))
    def get_tnm(self, case) -> str | None:
        # The stage is the gold answer of the case's classification items.
        return None if case.gold_hidden else case.tnm

    def get_url(self, case) -> str:
        return reverse("api-case", args=[case.pk])


class BenchmarkCaseListApi(generics.ListAPIView):
    """The cases of a Gastric-X benchmark in my scope, by case id, `limit`/`offset` paginated,
    with their counts of volumes, questions and boxes; `GET /api/cases/ID/` has the rest."""

    permission_classes = [HasRole.of(*ROLES)]
    serializer_class = CaseListOutput

    def get_queryset(self):
        gastricx = Benchmark.objects.filter(family=Family.GASTRICX)  # others have no cases: 404
        benchmark = visibility.get_benchmark_for_user_or_404(
            self.request.user, self.kwargs["name"], gastricx
        )
        cases = gastricx_cases(self.request.user, benchmark)
        return visibility.with_gold_hidden(cases, self.request.user, benchmark_path="benchmark")
