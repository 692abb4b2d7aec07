from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotations.api import views

urlpatterns = [
    path("token/", views.TokenObtainApi.as_view(), name="api-token"),
    path("benchmarks/", views.BenchmarkListApi.as_view(), name="api-benchmarks"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
