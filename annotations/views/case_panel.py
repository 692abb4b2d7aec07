"""The case an item belongs to, shown beside its review or adjudication (templates
review/case_panel.html): the CT viewer, the endoscopy image, the reports and the indicators.

What is shown follows selectors.visibility: while the gold is hidden from the user (a running
human baseline) neither the reports, nor the TNM stage, nor any box is shown; while the user
reviews the item blinded, boxes drawn by other people are left out, so no other reviewer's work
shows through the viewer.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from annotations.imaging import ct
from annotations.models import Item, ItemKind
from annotations.selectors.case_panel import case_panel_data
from annotations.views.cases import _image_config, _initial_slices, _viewer_config

REPORT_TITLES = {
    "diagnostic": _("Diagnostic report"),
    "ct": _("CT report"),
    "endoscopy": _("Endoscopy report"),
}


def case_panel_context(
    request: HttpRequest, item: Item, *, gold: bool, others_visible: bool
) -> dict | None:
    """The case panel of `item` for this user, or None for an item without a case.

    `gold` and `others_visible` come from `selectors.visibility.item_visibility` (`.gold`,
    `.reviews`): the caller has them, or knows them from the page's own check.
    """
    if item.case_id is None:
        return None
    data = case_panel_data(item, user=request.user, gold=gold, blinded=not others_visible)
    slices = _initial_slices(data.volumes)
    viewer = _viewer_config(request, data.volumes, slices)
    for volume in viewer["volumes"]:
        volume["boxes"] = [box for box in volume["boxes"] if box["id"] in data.box_ids]
    image = _image_config(request, data.case)
    if image is not None:
        image["boxes"] = [box for box in image["boxes"] if box["id"] in data.box_ids]
    return {
        "case": data.case,
        "gold": gold,
        "volumes": [(volume, slices[volume.pk]) for volume in data.volumes],
        "viewer_config": viewer,
        "image_config": image,
        "default_window": ct.WINDOW_PRESETS["soft_tissue"],
        "reports": [
            (kind, REPORT_TITLES[kind], text)
            for kind, text in data.reports.items()
            # The report under review is in the form already.
            if not (item.kind == ItemKind.OPEN and (item.target or {}).get("report") == kind)
        ],
        "under_review": (item.target or {}).get("report") if item.kind == ItemKind.OPEN else None,
    }
