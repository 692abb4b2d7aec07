from __future__ import annotations

from django.contrib.auth import authenticate
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations import selectors
from annotations.access import ROLES, HasRole
from annotations.services.accounts import api_token_create, api_tokens_revoke


class TokenObtainApi(APIView):
    """POST username and password, get `{"token": ..., "expiry": ...}` for
    `Authorization: Token ...`. Failed attempts are counted per user name and per address; too
    many get 429 for a while."""

    authentication_classes = []
    permission_classes = [AllowAny]

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)

    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField()
        expiry = serializers.DateTimeField()

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # The plain HttpRequest: django-axes records the failure on it and answers a lockout.
        user = authenticate(request._request, **data.validated_data)
        if user is None:
            body = {"detail": _("Wrong user name or password."), "code": "bad_credentials"}
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        token, expiry = api_token_create(user=user)
        return Response(self.OutputSerializer({"token": token, "expiry": expiry}).data)


class TokenRevokeApi(APIView):
    """POST with a token: revoke it (`?all=1`: every token of the user)."""

    @extend_schema(
        request=None,
        responses={200: inline_serializer("Revoked", {"revoked": serializers.IntegerField()})},
    )
    def post(self, request):
        every = request.query_params.get("all") == "1" or request.auth is None
        key = None if every else request.auth.token_key
        revoked = api_tokens_revoke(user=request.user, token_key=key)
        return Response({"revoked": revoked})


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
