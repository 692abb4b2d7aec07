"""Triage API: a benchmark's suspects, most suspect first, and recomputing them."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import ADJUDICATOR, CURATOR, HasRole
from annotations.labels import TRIAGE_REASON_LABELS
from annotations.models import Benchmark
from annotations.selectors import triage as selectors
from annotations.selectors import visibility
from annotations.services.triage import triage_schedule


class ReasonSerializer(serializers.Serializer):
    code = serializers.CharField()
    label = serializers.SerializerMethodField()
    weight = serializers.FloatField()
    detail = serializers.CharField(default="")
    evidence = serializers.DictField(default=dict)

    def get_label(self, reason: dict) -> str:
        return str(TRIAGE_REASON_LABELS.get(reason["code"], reason["code"]))


class BenchmarkTriageApi(ListAPIView):
    """The benchmark's suspects (score > 0), most suspect first (`sort=index` for index order),
    optionally those with one reason (`reason=CODE`), each with its weighted reasons."""

    permission_classes = [HasRole.of(CURATOR, ADJUDICATOR)]

    class OutputSerializer(serializers.Serializer):
        item = serializers.IntegerField(source="item_id")
        index = serializers.IntegerField(source="item.source_index")
        status = serializers.CharField(source="item.status")
        score = serializers.FloatField()
        reasons = ReasonSerializer(many=True)

    serializer_class = OutputSerializer

    def get_queryset(self):
        user = self.request.user
        benchmark = visibility.get_benchmark_for_user_or_404(user, self.kwargs["name"])
        # The evidence names the gold answer and the models' hits.
        visibility.check_gold_visible(user, benchmark.pk)
        params = self.request.query_params
        return selectors.suspicion_list(
            benchmark, code=params.get("reason", ""), sort=params.get("sort", "score"), viewer=user
        )

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        visibility.redact_review_reasons(page)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("reason", OpenApiTypes.STR, description="one reason code"),
            OpenApiParameter("sort", OpenApiTypes.STR, enum=["score", "index"]),
        ]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class BenchmarkTriageRecomputeApi(APIView):
    """Recompute the benchmark's triage on a worker (202); the list shows the new scores once
    it is done."""

    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(request=None, responses={202: None})
    def post(self, request, name: str):
        benchmark = get_object_or_404(Benchmark, name=name)
        triage_schedule(benchmark_id=benchmark.pk, user=request.user)
        return Response(status=status.HTTP_202_ACCEPTED)
