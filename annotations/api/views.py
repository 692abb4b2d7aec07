from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations import selectors
from annotations.access import ROLES, HasRole


class TokenObtainApi(ObtainAuthToken):
    """POST username and password, get `{"token": ...}` for `Authorization: Token ...`."""


class BenchmarkListApi(APIView):
    """The benchmarks in my scope with their item counts by status."""

    permission_classes = [HasRole.of(*ROLES)]

    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        family = serializers.CharField()
        total = serializers.IntegerField()
        counts = serializers.DictField(child=serializers.IntegerField())

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request):
        rows = [
            {
                "name": s.benchmark.name,
                "family": s.benchmark.family,
                "total": s.total,
                "counts": s.counts,
            }
            for s in selectors.benchmark_summaries(request.user)
        ]
        return Response(self.OutputSerializer(rows, many=True).data)
