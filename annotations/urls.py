from __future__ import annotations

from django.urls import path

from annotations.views import core

urlpatterns = [
    path("", core.dashboard, name="dashboard"),
    path("benchmarks/<slug:name>/", core.benchmark_detail, name="benchmark"),
    path("items/<int:pk>/", core.item_detail, name="item"),
    path("images/<str:sha256>", core.image_file, name="image"),
    path("healthz", core.health, name="health"),
]
