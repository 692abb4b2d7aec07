"""Runs and leaderboards over the API (curators only: run names are hidden from graders)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import CURATOR, HasRole
from annotations.models import Benchmark, ModelEndpoint
from annotations.selectors import runs as run_selectors
from annotations.selectors import visibility
from annotations.services import runs as run_services
from annotations.services.errors import DomainError
from annotations.services.runs.results import run_results


class ScoreSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    hits = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    low = serializers.FloatField()
    high = serializers.FloatField()


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    benchmark = serializers.CharField(source="benchmark.name")
    endpoint = serializers.CharField(source="endpoint.name", allow_null=True, default=None)
    judge = serializers.CharField(source="judge.name", allow_null=True, default=None)
    label = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    filters = serializers.DictField()
    with_image = serializers.BooleanField()
    lenient = serializers.BooleanField()
    vlmeval_commit = serializers.CharField(
        help_text="the VLMEvalKit commit whose rules read the answers ('' before them)"
    )
    concurrency = serializers.IntegerField()
    total = serializers.IntegerField()
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    overall = ScoreSerializer(source="summary.overall", allow_null=True, default=None)
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunListCreateApi(ListAPIView):
    """GET: the runs, newest first. POST: start a run (a model endpoint or a baseline)."""

    permission_classes = [HasRole.of(CURATOR)]
    serializer_class = RunOutputSerializer

    class InputSerializer(serializers.Serializer):
        benchmark = serializers.SlugField()
        endpoint = serializers.CharField(required=False, help_text="name of a ModelEndpoint")
        baseline = serializers.ChoiceField(choices=run_services.BASELINES, required=False)
        filters = serializers.DictField(required=False, default=dict)
        with_image = serializers.BooleanField(default=True)
        lenient = serializers.BooleanField(
            default=False, help_text="also score by the lenient readings, beside VLMEvalKit's"
        )
        concurrency = serializers.IntegerField(
            default=4, min_value=1, max_value=run_services.MAX_CONCURRENCY
        )
        seed = serializers.IntegerField(default=0)
        label = serializers.CharField(required=False, default="", allow_blank=True)
        judge = serializers.CharField(
            required=False,
            help_text="name of a ModelEndpoint that reads the answers the rules cannot",
        )

        def validate(self, data: dict) -> dict:
            if bool(data.get("endpoint")) == bool(data.get("baseline")):
                raise serializers.ValidationError("Give exactly one of endpoint and baseline.")
            return data

    def get_queryset(self):
        benchmark = self.request.query_params.get("benchmark")
        runs = visibility.in_scope(run_selectors.run_list(), self.request.user)
        return runs.filter(benchmark__name=benchmark) if benchmark else runs

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer})
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        benchmark = get_object_or_404(Benchmark, name=data["benchmark"])
        if data.get("baseline"):
            endpoint = run_services.endpoint_ensure_baseline(baseline=data["baseline"])
        else:
            endpoint = get_object_or_404(ModelEndpoint, name=data["endpoint"])
        judge = get_object_or_404(ModelEndpoint, name=data["judge"]) if data.get("judge") else None
        run = run_services.run_create(
            benchmark=benchmark,
            endpoint=endpoint,
            judge=judge,
            filters=data["filters"],
            with_image=data["with_image"],
            lenient=data["lenient"],
            concurrency=data["concurrency"],
            seed=data["seed"],
            label=data["label"],
            created_by=request.user,
        )
        run = run_selectors.run_get(pk=run.pk)
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    permission_classes = [HasRole.of(CURATOR)]

    class OutputSerializer(RunOutputSerializer):
        summary = serializers.DictField()

    @extend_schema(responses=OutputSerializer)
    def get(self, request, pk: int):
        run = visibility.get_run_for_user_or_404(request.user, pk, run_selectors.run_list())
        visibility.check_gold_visible(request.user, run.benchmark_id)
        return Response(self.OutputSerializer(run).data)


class RunResultsApi(APIView):
    """The run's scores and every prediction (reply, readings, hit, confidence, parsed box or
    ranks), as `run_model --out` writes them; `python -m annotations.scoring RELEASE_DIR FILE`
    prints the same scores from it (docs/releases.md)."""

    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request, pk: int):
        run = visibility.get_run_for_user_or_404(request.user, pk, run_selectors.run_list())
        visibility.check_gold_visible(request.user, run.benchmark_id)
        return Response(run_results(run))


class RunCancelApi(APIView):
    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(request=None, responses={200: RunOutputSerializer})
    def post(self, request, pk: int):
        run = get_object_or_404(run_selectors.run_list(), pk=pk)
        if not run_services.run_cancel(run=run):
            raise DomainError("This run had already ended.", code="not_active")
        return Response(RunOutputSerializer(run_selectors.run_get(pk=run.pk)).data)


class RunRetryApi(APIView):
    """An ended run back to the queue for the items without a good answer (failed requests,
    items a failed or cancelled run never reached); its good answers are kept."""

    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(request=None, responses={200: RunOutputSerializer})
    def post(self, request, pk: int):
        run = get_object_or_404(run_selectors.run_list(), pk=pk)
        run_services.run_retry(run=run)
        return Response(RunOutputSerializer(run_selectors.run_get(pk=run.pk)).data)


class BenchmarkLeaderboardApi(APIView):
    """Finished runs of a benchmark, best first, with accuracy overall and by every field."""

    permission_classes = [HasRole.of(CURATOR)]

    class OutputSerializer(serializers.Serializer):
        run = serializers.IntegerField(source="run.pk")
        label = serializers.CharField(source="run.label")
        kind = serializers.CharField(source="run.kind")
        with_image = serializers.BooleanField(source="run.with_image")
        overall = ScoreSerializer()
        by = serializers.DictField(
            child=serializers.DictField(child=ScoreSerializer()), source="run.summary.by"
        )

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request, name: str):
        benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
        visibility.check_gold_visible(request.user, benchmark.pk)
        board = run_selectors.leaderboard(benchmark=benchmark)
        return Response(self.OutputSerializer(board.rows, many=True).data)
