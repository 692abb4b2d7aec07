"""Human-baseline API: a curator opens a session for a clinician; the clinician fetches the next
item (never its answer) and answers it. The answers form a run on the leaderboard."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, HasRole
from annotations.api.runs import RunOutputSerializer
from annotations.models import Benchmark, Item, Run
from annotations.selectors import review as selectors
from annotations.selectors import runs as run_selectors
from annotations.services.human_baseline import (
    baseline_options,
    human_answer_submit,
    human_baseline_open,
    human_baseline_reassign,
    human_baseline_settle,
)

CLINICIANS = [HasRole.of(REVIEWER, ADJUDICATOR)]


class SessionSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    benchmark = serializers.CharField(source="benchmark.name")
    status = serializers.CharField()
    total = serializers.IntegerField()
    completed = serializers.IntegerField()


class BenchmarkBaselineOpenApi(APIView):
    """Open a human-baseline session for a clinician (a reviewer or an adjudicator) over the
    benchmark's items matching the filters, the first `limit` of them."""

    permission_classes = [HasRole.of(CURATOR)]

    class InputSerializer(serializers.Serializer):
        clinician = serializers.CharField(help_text="username")
        filters = serializers.DictField(child=serializers.CharField(), required=False, default=dict)
        limit = serializers.IntegerField(required=False, min_value=1, allow_null=True)

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer})
    def post(self, request, name: str):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        benchmark = get_object_or_404(Benchmark, name=name)
        clinician = get_object_or_404(get_user_model(), username=data.validated_data["clinician"])
        run = human_baseline_open(
            benchmark=benchmark,
            clinician=clinician,
            opened_by=request.user,
            filters=data.validated_data["filters"],
            limit=data.validated_data.get("limit"),
        )
        return Response(
            RunOutputSerializer(run_selectors.run_get(pk=run.pk)).data,
            status=status.HTTP_201_CREATED,
        )


class BaselineReassignApi(APIView):
    """Give a human-baseline session's items to another clinician: a new session (201) over the
    same items; the old one ends if still open, its answers kept as a partial baseline."""

    permission_classes = [HasRole.of(CURATOR)]

    class InputSerializer(serializers.Serializer):
        clinician = serializers.CharField(help_text="username")

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer})
    def post(self, request, pk: int):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        run = get_object_or_404(Run.objects.select_related("benchmark"), pk=pk, kind="human")
        clinician = get_object_or_404(get_user_model(), username=data.validated_data["clinician"])
        session = human_baseline_reassign(run=run, clinician=clinician, opened_by=request.user)
        return Response(
            RunOutputSerializer(run_selectors.run_get(pk=session.pk)).data,
            status=status.HTTP_201_CREATED,
        )


class BaselineSessionListApi(APIView):
    """My human-baseline sessions, open ones first."""

    permission_classes = CLINICIANS

    @extend_schema(responses=SessionSerializer(many=True))
    def get(self, request):
        sessions = selectors.baseline_sessions(request.user)
        return Response(SessionSerializer(sessions, many=True).data)


class BaselineNextApi(APIView):
    """The next item of my session to answer, without its answer; 204 when all are answered."""

    permission_classes = CLINICIANS

    class OutputSerializer(serializers.Serializer):
        item = serializers.IntegerField(source="pk")
        index = serializers.IntegerField(source="source_index")
        question = serializers.CharField()
        hint = serializers.CharField()
        options = serializers.SerializerMethodField()
        images = serializers.SerializerMethodField()

        def get_options(self, item: Item) -> dict[str, str]:
            return dict(baseline_options(item, item.benchmark.label_sets))

        def get_images(self, item: Item) -> list[str]:
            return [reverse("image", args=[link.image.sha256]) for link in item.item_images.all()]

    @extend_schema(
        responses={200: OutputSerializer, 204: OpenApiResponse(description="All answered")}
    )
    def get(self, request, pk: int):
        run = human_baseline_settle(run=selectors.baseline_session(request.user, pk))
        item = selectors.next_baseline_item(run)
        if item is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(self.OutputSerializer(item).data)


class BaselineAnswerApi(APIView):
    """My answer (an option letter) to one item of my session; the session closes, with its
    scores, at the last answer."""

    permission_classes = CLINICIANS

    class InputSerializer(serializers.Serializer):
        item = serializers.IntegerField()
        letter = serializers.CharField(max_length=1)
        seconds_spent = serializers.FloatField(required=False, allow_null=True, min_value=0)

    @extend_schema(request=InputSerializer, responses={201: SessionSerializer})
    def post(self, request, pk: int):
        run = selectors.baseline_session(request.user, pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = get_object_or_404(
            Item, pk=data.validated_data["item"], benchmark_id=run.benchmark_id
        )
        human_answer_submit(
            run=run,
            item=item,
            user=request.user,
            letter=data.validated_data["letter"],
            seconds_spent=data.validated_data.get("seconds_spent"),
        )
        run.refresh_from_db()
        return Response(SessionSerializer(run).data, status=status.HTTP_201_CREATED)
