"""Importing a benchmark through the API, and following any background job."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotations.access import CURATOR, HasRole
from annotations.labels import import_problem
from annotations.models import Job
from annotations.services.errors import DomainError
from annotations.services.import_jobs import (
    FILE_TYPES,
    file_type_problem,
    import_start,
    upload_discard,
    upload_store,
)
from annotations.services.imports import ImportFailed
from annotations.uploads import too_large_message


def job_report(job: Job) -> dict[str, Any]:
    """The job's result; an import's problems each with `where` and `message` in the
    reader's language beside their `row`, `column`, `code` and `reason`."""
    report = dict(job.result) if isinstance(job.result, dict) else {}
    if report.get("problems"):
        file_name = (job.params or {}).get("file_name", "")
        report["problems"] = [_problem(problem, file_name) for problem in report["problems"]]
    return report


def _problem(problem: dict | str, file_name: str) -> dict[str, Any]:
    shown = import_problem(problem, file_name=file_name)
    stored = problem if isinstance(problem, dict) else {"reason": problem}
    return {**stored, "where": shown["where"], "message": shown["text"]}


class ProgressOutput(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.FloatField()


class JobOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    state = serializers.CharField(source="status", help_text="queued, running, done or failed")
    progress = serializers.SerializerMethodField()
    message = serializers.CharField()
    report = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    @extend_schema_field(ProgressOutput)
    def get_progress(self, job: Job) -> dict:
        return {"done": job.done, "total": job.total, "percent": round(job.percent, 1)}

    @extend_schema_field(
        serializers.DictField(
            help_text="an import's: benchmark, items, problems (row, column, code, reason, "
            "where, message), problems_total, warnings, warning_counts, warnings_total"
        )
    )
    def get_report(self, job: Job) -> dict:
        return job_report(job)

    def get_url(self, job: Job) -> str:
        return reverse("api-job", args=[job.pk])


class RefusalOutput(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    report = serializers.DictField(required=False)


class JobDetailApi(APIView):
    """A background job (an import, a triage, a degradation): its state, progress and report."""

    permission_classes = [HasRole.of(CURATOR)]

    @extend_schema(responses=JobOutput)
    def get(self, request, pk: int):
        return Response(JobOutput(get_object_or_404(Job, pk=pk)).data)


class ImportCreateApi(APIView):
    """POST multipart `file`, `family` and `name`: a new benchmark is imported by a worker; the
    answer (202) is its job, to follow at `url`. Refused at once (400, with the report) when the
    upload is too large, its type does not fit the family, the name is taken, or the header or
    archive is already wrong; every row is checked by the worker (the job's report)."""

    permission_classes = [HasRole.of(CURATOR)]
    parser_classes = [MultiPartParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        family = serializers.ChoiceField(choices=sorted(FILE_TYPES))
        name = serializers.SlugField(max_length=100)

    @extend_schema(
        request={"multipart/form-data": InputSerializer},
        responses={
            202: JobOutput,
            400: OpenApiResponse(RefusalOutput, description="refused; nothing was stored"),
        },
    )
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        # Known once the body is parsed: the upload handler stopped reading at the limit.
        if getattr(request._request, "upload_refused", False):
            return _refused(too_large_message(), "too_large")
        data.is_valid(raise_exception=True)
        upload, family = data.validated_data["file"], data.validated_data["family"]
        problem = file_type_problem(family, upload.name or "")
        if problem:
            return _refused(problem, "wrong_file_type")
        stored = upload_store(upload=upload)
        try:
            job = import_start(
                stored=stored, family=family, name=data.validated_data["name"], user=request.user
            )
        except ImportFailed as error:
            upload_discard(stored=stored)
            problems = [_problem(asdict(problem), stored.name) for problem in error.problems]
            report = {"problems": problems, "problems_total": len(problems)}
            return _refused(str(error), error.code, report)
        except DomainError:
            upload_discard(stored=stored)
            raise
        return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED)


def _refused(detail: str, code: str, report: dict | None = None) -> Response:
    body: dict[str, Any] = {"detail": str(detail), "code": code}
    if report is not None:
        body["report"] = report
    return Response(body, status=status.HTTP_400_BAD_REQUEST)
