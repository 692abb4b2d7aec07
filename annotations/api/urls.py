from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from annotations.api import benchmarks as benchmark_api
from annotations.api import cases as case_api
from annotations.api import docs as api_docs
from annotations.api import human_baseline as baseline_api
from annotations.api import imports as import_api
from annotations.api import releases as release_api
from annotations.api import review as review_api
from annotations.api import runs as run_apis
from annotations.api import triage as triage_api
from annotations.api import views

urlpatterns = [
    path("token/", views.TokenObtainApi.as_view(), name="api-token"),
    path("token/revoke/", views.TokenRevokeApi.as_view(), name="api-token-revoke"),
    path("benchmarks/", views.BenchmarkListApi.as_view(), name="api-benchmarks"),
    path(
        "benchmarks/<slug:name>/items/",
        benchmark_api.BenchmarkItemListApi.as_view(),
        name="api-benchmark-items",
    ),
    path(
        "benchmarks/<slug:name>/cases/",
        benchmark_api.BenchmarkCaseListApi.as_view(),
        name="api-benchmark-cases",
    ),
    path("imports/", import_api.ImportCreateApi.as_view(), name="api-imports"),
    path("jobs/<int:pk>/", import_api.JobDetailApi.as_view(), name="api-job"),
    path("cases/<int:pk>/", case_api.CaseDetailApi.as_view(), name="api-case"),
    path("volumes/<int:pk>/", case_api.VolumeDetailApi.as_view(), name="api-volume"),
    path("volumes/<int:pk>/boxes/", case_api.VolumeBoxesApi.as_view(), name="api-volume-boxes"),
    path("images/<str:sha256>/boxes/", case_api.ImageBoxesApi.as_view(), name="api-image-boxes"),
    path("boxes/<int:pk>/", case_api.BoxUpdateApi.as_view(), name="api-box"),
    path("boxes/<int:pk>/review/", case_api.BoxReviewApi.as_view(), name="api-box-review"),
    path("boxes/<int:pk>/copy/", case_api.BoxCopyApi.as_view(), name="api-box-copy"),
    path("boxes/<int:pk>/restore/", case_api.BoxRestoreApi.as_view(), name="api-box-restore"),
    path("runs/", run_apis.RunListCreateApi.as_view(), name="api-runs"),
    path("runs/<int:pk>/", run_apis.RunDetailApi.as_view(), name="api-run"),
    path("runs/<int:pk>/results/", run_apis.RunResultsApi.as_view(), name="api-run-results"),
    path("runs/<int:pk>/cancel/", run_apis.RunCancelApi.as_view(), name="api-run-cancel"),
    path("runs/<int:pk>/retry/", run_apis.RunRetryApi.as_view(), name="api-run-retry"),
    path(
        "benchmarks/<slug:name>/leaderboard/",
        run_apis.BenchmarkLeaderboardApi.as_view(),
        name="api-leaderboard",
    ),
    path("queue/next/", review_api.QueueNextApi.as_view(), name="api-queue-next"),
    path("items/<int:pk>/", review_api.ItemDetailApi.as_view(), name="api-item"),
    path("items/<int:pk>/reviews/", review_api.ItemReviewsApi.as_view(), name="api-item-reviews"),
    path(
        "items/<int:pk>/reviews/mine/",
        review_api.ItemReviewMineApi.as_view(),
        name="api-item-review-mine",
    ),
    path(
        "items/<int:pk>/adjudication/",
        review_api.ItemAdjudicationApi.as_view(),
        name="api-item-adjudication",
    ),
    path(
        "benchmarks/<slug:name>/assignments/",
        review_api.BenchmarkAssignmentsApi.as_view(),
        name="api-benchmark-assignments",
    ),
    path(
        "benchmarks/<slug:name>/agreement/",
        review_api.BenchmarkAgreementApi.as_view(),
        name="api-benchmark-agreement",
    ),
    path(
        "benchmarks/<slug:name>/triage/",
        triage_api.BenchmarkTriageApi.as_view(),
        name="api-benchmark-triage",
    ),
    path(
        "benchmarks/<slug:name>/triage/recompute/",
        triage_api.BenchmarkTriageRecomputeApi.as_view(),
        name="api-benchmark-triage-recompute",
    ),
    path(
        "benchmarks/<slug:name>/baselines/",
        baseline_api.BenchmarkBaselineOpenApi.as_view(),
        name="api-benchmark-baselines",
    ),
    path("baselines/", baseline_api.BaselineSessionListApi.as_view(), name="api-baselines"),
    path(
        "baselines/<int:pk>/reassign/",
        baseline_api.BaselineReassignApi.as_view(),
        name="api-baseline-reassign",
    ),
    path(
        "baselines/<int:pk>/next/", baseline_api.BaselineNextApi.as_view(), name="api-baseline-next"
    ),
    path(
        "baselines/<int:pk>/answers/",
        baseline_api.BaselineAnswerApi.as_view(),
        name="api-baseline-answers",
    ),
    path("releases/", release_api.ReleaseListApi.as_view(), name="api-releases"),
    path("releases/create/", release_api.ReleaseCreateApi.as_view(), name="api-release-create"),
    path("releases/<int:pk>/", release_api.ReleaseDetailApi.as_view(), name="api-release"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", api_docs.ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path(
        "redoc/",
        api_docs.ApiRedocView.as_view(url_name="api-schema", template_name="api/redoc.html"),
        name="api-redoc",
    ),
]
