"""Gastric-X case pages: the case list and the case page with the multi-phase CT viewer."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET

from annotations.access import ROLES, role_required
from annotations.imaging import chunks, ct
from annotations.models import Benchmark, BoxLabel, BoxState, Case, Family, Volume
from annotations.selectors import cases as selectors
from annotations.selectors import visibility
from annotations.services.boxes import CT_LABELS, box_may_correct, box_may_draw, box_may_judge

PRESET_NAMES = {
    "soft_tissue": _("Soft tissue"),
    "liver": _("Liver"),
    "lung": _("Lung"),
    "bone": _("Bone"),
    "brain": _("Brain"),
}


@require_GET
@role_required(*ROLES)
def case_list(request: HttpRequest, name: str | None = None) -> HttpResponse:
    benchmark = None
    if name is not None:
        gastricx = Benchmark.objects.filter(family=Family.GASTRICX)
        benchmark = visibility.get_benchmark_for_user_or_404(request.user, name, gastricx)
    cases = selectors.gastricx_cases(request.user, benchmark)
    page = Paginator(cases, 50).get_page(request.GET.get("page"))
    return render(request, "cases/case_list.html", {"benchmark": benchmark, "page": page})


def _initial_slices(volumes: list[Volume]) -> dict[int, int]:
    """The slice of each phase at the patient position of the first phase's middle slice."""
    if not volumes:
        return {}
    first = volumes[0]
    centre = ((first.size_x - 1) / 2, (first.size_y - 1) / 2, first.size_z // 2)
    point = ct.index_to_lps(centre, first.spacing, first.origin, first.direction)
    slices = {}
    for volume in volumes:
        z = ct.lps_to_index(point, volume.spacing, volume.origin, volume.direction)[2]
        slices[volume.pk] = min(max(round(z), 0), volume.size_z - 1)
    return slices


def _box_json(box) -> dict:
    return {
        "id": box.pk,
        "label": box.label,
        "voxel": box.voxel,
        "mm": box.mm,
        "state": box.state,
        "source": box.source,
        "version": box.version,
        "author": box.author.get_username() if box.author else "",
    }


def _viewer_config(request: HttpRequest, volumes: list[Volume], slices: dict[int, int]) -> dict:
    corrects = bool(volumes) and box_may_correct(request.user, volume=volumes[0])
    return {
        "csrfToken": get_token(request),
        "presets": [
            {"key": key, "name": str(PRESET_NAMES[key]), "width": w, "level": level}
            for key, (w, level) in ct.WINDOW_PRESETS.items()
        ],
        "labels": {value: str(BoxLabel(value).label) for value in CT_LABELS},
        "states": {value: str(label) for value, label in BoxState.choices},
        "username": request.user.get_username(),
        "volumes": [
            {
                "id": v.pk,
                "phase": v.phase,
                "phaseName": str(v.get_phase_display()),
                "shape": list(v.shape),
                "spacing": v.spacing,
                "origin": v.origin,
                "direction": v.direction,
                "initialZ": slices[v.pk],
                "voxelsUrl": reverse("volume-voxels", args=[v.pk]),
                "sliceUrl": reverse("volume-slice", args=[v.pk, 0]).replace("/0.png", "/{z}.png"),
                "slice16Url": reverse("volume-slice-voxels", args=[v.pk, 0]).replace(
                    "/0.i16", "/{z}.i16"
                ),
                "chunkUrl": reverse("volume-chunk", args=[v.pk, 0]).replace("/0.i16", "/{i}.i16"),
                "chunkSlices": chunks.CHUNK_SLICES,
                "boxesUrl": reverse("api-volume-boxes", args=[v.pk]),
                "boxes": [_box_json(b) for b in v.boxes.all()],
            }
            for v in volumes
        ],
        "boxUrl": reverse("api-box", args=[0]).replace("/0/", "/{id}/"),
        # What the box tool offers this user (the service enforces it again).
        "canDraw": bool(volumes) and box_may_draw(request.user, volume=volumes[0]),
        "canJudge": corrects or (bool(volumes) and box_may_judge(request.user, volume=volumes[0])),
        "canCorrect": corrects,
    }


def ct_viewer_context(request: HttpRequest, volumes: list[Volume]) -> dict:
    """What templates/cases/_ct_viewer.html and _box_panel.html need: `volumes` as (volume,
    initial slice) pairs, `viewer_config` (also for json_script "ct-config") and
    `default_window`. `volumes` in phase order with their boxes (selectors.cases.case_page)."""
    slices = _initial_slices(volumes)
    return {
        "volumes": [(v, slices[v.pk]) for v in volumes],
        "viewer_config": _viewer_config(request, volumes, slices),
        "default_window": ct.WINDOW_PRESETS["soft_tissue"],
    }


@require_GET
@role_required(*ROLES)
def case_detail(request: HttpRequest, pk: int) -> HttpResponse:
    cases = Case.objects.select_related("benchmark", "endoscopy_image").prefetch_related(
        "indicators"
    )
    cases = visibility.with_gold_hidden(cases, request.user, benchmark_path="benchmark")
    case = visibility.get_case_for_user_or_404(request.user, pk, cases)
    page = selectors.case_page(case, request.user)
    # The reports, the stage and the boxes are the gold of the report, classification and
    # localization items: hidden from a clinician answering a human baseline of the benchmark.
    visibility.without_blinded_gold(case)
    context = {
        "case": case,
        **ct_viewer_context(request, page.volumes),
        "items": page.items,
        "reports": [
            (_("Diagnostic report"), case.reports.get("diagnostic")),
            (_("CT report"), case.reports.get("ct")),
            (_("Endoscopy report"), case.reports.get("endoscopy")),
        ],
        "image_config": _image_config(request, case),
    }
    # Boxes of other people are hidden while the user reviews an item of the case, and the
    # imported ones too while they answer its baseline (selectors.visibility).
    visible = visibility.case_box_ids_visible_to(request.user, case)
    for volume in context["viewer_config"]["volumes"]:
        volume["boxes"] = [box for box in volume["boxes"] if box["id"] in visible]
    if context["image_config"] is not None:
        image_boxes = context["image_config"]["boxes"]
        context["image_config"]["boxes"] = [box for box in image_boxes if box["id"] in visible]
    return render(request, "cases/case.html", context)


def _image_config(request: HttpRequest, case: Case) -> dict | None:
    image = case.endoscopy_image
    if image is None:
        return None
    return {
        "csrfToken": get_token(request),
        "width": image.width,
        "height": image.height,
        "boxesUrl": reverse("api-image-boxes", args=[image.sha256]),
        "canDraw": box_may_draw(request.user, image=image),
        "labels": {value: str(label) for value, label in BoxLabel.choices},
        "boxes": [
            {"id": b.pk, "label": b.label, "box": b.voxel, "state": b.state, "version": b.version}
            for b in selectors.image_boxes(image)
        ],
    }
