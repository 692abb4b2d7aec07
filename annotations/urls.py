from __future__ import annotations

from django.urls import path

from annotations.views import core, imports

urlpatterns = [
    path("", core.dashboard, name="dashboard"),
    path("benchmarks/import/", imports.benchmark_import_view, name="benchmark-import"),
    path("benchmarks/<slug:name>/", core.benchmark_detail, name="benchmark"),
    path("jobs/<int:pk>/", imports.job_detail, name="job"),
    path("items/<int:pk>/", core.item_detail, name="item"),
    path("images/<str:sha256>", core.image_file, name="image"),
    path("healthz", core.health, name="health"),
]
