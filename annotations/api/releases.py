"""Releases over the API: list, create (built by a worker), detail with the manifest."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import CURATOR, HasRole
from annotations.api.pagination import BoundedLimitOffsetPagination
from annotations.models import Benchmark, Release
from annotations.selectors import releases as selectors
from annotations.selectors import visibility
from annotations.services.releases import FILTER_FIELDS, release_selection, release_start


class ReleaseOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    benchmark = serializers.CharField(source="benchmark.name")
    name = serializers.CharField()
    version = serializers.CharField()
    status = serializers.CharField()
    include_all = serializers.BooleanField()
    filters = serializers.SerializerMethodField()
    withhold_split = serializers.SerializerMethodField()
    item_count = serializers.IntegerField()
    progress = serializers.IntegerField()
    error = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", default=None)
    created_at = serializers.DateTimeField()
    published_at = serializers.DateTimeField(allow_null=True)

    def get_filters(self, release) -> dict[str, list[str]]:
        return release_selection(release)[0]

    def get_withhold_split(self, release) -> str:
        return release_selection(release)[1]


class ReleaseDetailOutputSerializer(ReleaseOutputSerializer):
    manifest = serializers.JSONField()


class ReleaseListApi(APIView):
    """Releases, newest first; `?benchmark=NAME` keeps one benchmark's."""

    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(
        parameters=[OpenApiParameter("benchmark", str, required=False)],
        responses=ReleaseOutputSerializer(many=True),
    )
    def get(self, request):
        name = request.query_params.get("benchmark")
        user = request.user
        benchmark = visibility.get_benchmark_for_user_or_404(user, name) if name else None
        releases = visibility.in_scope(selectors.release_list(benchmark=benchmark), user)
        paginator = BoundedLimitOffsetPagination()
        page = paginator.paginate_queryset(releases, request, view=self)
        return paginator.get_paginated_response(ReleaseOutputSerializer(page, many=True).data)


class ReleaseCreateApi(APIView):
    """Create a release; a worker builds it (follow `status` and `progress` on its detail)."""

    permission_classes = [HasRole.of(CURATOR)]

    class InputSerializer(serializers.Serializer):
        benchmark = serializers.SlugRelatedField(
            slug_field="name", queryset=Benchmark.objects.all()
        )
        name = serializers.CharField(max_length=100, required=False)
        version = serializers.CharField(max_length=40)
        include_all = serializers.BooleanField(default=False)
        filters = serializers.DictField(
            child=serializers.ListField(child=serializers.CharField()), required=False
        )
        withhold_split = serializers.CharField(required=False, allow_blank=True, default="")

        def validate_filters(self, filters: dict) -> dict:
            unknown = sorted(set(filters) - set(FILTER_FIELDS))
            if unknown:
                raise serializers.ValidationError(f"unknown filter fields: {unknown}")
            return filters

    @extend_schema(request=InputSerializer, responses={201: ReleaseOutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        release = release_start(
            benchmark=values["benchmark"],
            name=values.get("name") or values["benchmark"].name,
            version=values["version"],
            user=request.user,
            include_all=values["include_all"],
            filters=values.get("filters") or {},
            withhold_split=values["withhold_split"],
        )
        return Response(ReleaseOutputSerializer(release).data, status=status.HTTP_201_CREATED)


class ReleaseDetailApi(APIView):
    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(responses=ReleaseDetailOutputSerializer)
    def get(self, request, pk: int):
        releases = Release.objects.select_related("benchmark", "created_by")
        release = visibility.get_release_for_user_or_404(request.user, pk, releases)
        return Response(ReleaseDetailOutputSerializer(release).data)
