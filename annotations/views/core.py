"""Dashboard, benchmark and item pages, image files, health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.core.paginator import Paginator
from django.db import connection
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from annotations import selectors
from annotations.access import ROLES, role_required
from annotations.models import Item, ItemStatus
from annotations.selectors import visibility


@require_GET
@role_required(*ROLES)
def dashboard(request: HttpRequest) -> HttpResponse:
    summaries = selectors.benchmark_summaries(request.user)
    return render(request, "annotations/dashboard.html", {"summaries": summaries})


@require_GET
@role_required(*ROLES)
def benchmark_detail(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    status = request.GET.get("status", "")
    category = request.GET.get("category", "")
    query = request.GET.get("q", "")
    items = selectors.benchmark_items(benchmark, status=status, category=category, query=query)
    page = Paginator(items, 50).get_page(request.GET.get("page"))
    categories = (
        Item.objects.filter(benchmark=benchmark)
        .order_by("category")
        .values_list("category", flat=True)
        .distinct()
    )
    context = {
        "benchmark": benchmark,
        "page": page,
        "statuses": ItemStatus.choices,
        "categories": [c for c in categories if c],
        "filters": {"status": status, "category": category, "q": query},
        "gold_visible": not visibility.gold_hidden(request.user, benchmark.pk),
    }
    return render(request, "annotations/benchmark.html", context)


@require_GET
@role_required(*ROLES)
def item_detail(request: HttpRequest, pk: int) -> HttpResponse:
    items = Item.objects.select_related("benchmark", "clean_twin").prefetch_related(
        "item_images__image"
    )
    items = visibility.with_gold_hidden(items, request.user, benchmark_path="benchmark")
    item = visibility.get_item_for_user_or_404(request.user, pk, items)
    context = {"item": item, "visibility": visibility.item_visibility(request.user, item)}
    return render(request, "annotations/item.html", context)


@require_GET
@role_required(*ROLES)
@cache_control(private=True, max_age=86400, immutable=True)
def image_file(request: HttpRequest, sha256: str) -> FileResponse:
    # Served through a view, not as public media: images are patient data and need a login.
    image = visibility.get_image_for_user_or_404(request.user, sha256)
    return FileResponse(image.file.open("rb"), content_type=image.content_type)


@login_not_required
@require_GET
def health(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
