"""Dashboard and item pages, image files, health check."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from annotations import selectors
from annotations.access import ROLES, role_required
from annotations.imaging.thumbs import THUMB_CONTENT_TYPE
from annotations.models import Item
from annotations.selectors import visibility
from annotations.selectors.work import open_work
from annotations.services.thumbnails import THUMB_SIZES, thumbnail_get_or_create


@require_GET
@role_required(*ROLES)
def dashboard(request: HttpRequest) -> HttpResponse:
    summaries = selectors.benchmark_summaries(request.user)
    # Each role's open work per benchmark, counted as the hub and the queues count it.
    work = open_work(request.user)
    my_work = [(s.benchmark, work[s.benchmark.pk]) for s in summaries if s.benchmark.pk in work]
    context = {"summaries": summaries, "my_work": [row for row in my_work if row[1].any]}
    return render(request, "annotations/dashboard.html", context)


@require_GET
@role_required(*ROLES)
def item_detail(request: HttpRequest, pk: int) -> HttpResponse:
    items = Item.objects.select_related(
        "benchmark", "clean_twin", "pool_item__benchmark"
    ).prefetch_related("item_images__image")
    items = visibility.with_gold_hidden(items, request.user, benchmark_path="benchmark")
    item = visibility.get_item_for_user_or_404(request.user, pk, items)
    context = {
        "item": item,
        "visibility": visibility.item_visibility(request.user, item),
        "pool_item": visibility.pool_item_visible(request.user, item),
    }
    return render(request, "annotations/item.html", context)


@require_GET
@role_required(*ROLES)
@cache_control(private=True, max_age=86400, immutable=True)
def image_file(request: HttpRequest, sha256: str) -> FileResponse:
    # Served through a view, not as public media: images are patient data and need a login.
    image = visibility.get_image_for_user_or_404(request.user, sha256)
    size = request.GET.get("w")
    if size is None:
        return FileResponse(image.file.open("rb"), content_type=image.content_type)
    if not size.isdigit() or int(size) not in THUMB_SIZES:
        raise Http404
    path = thumbnail_get_or_create(image=image, size=int(size))
    return FileResponse(path.open("rb"), content_type=THUMB_CONTENT_TYPE)


@login_not_required
@require_GET
def health(request: HttpRequest) -> JsonResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
