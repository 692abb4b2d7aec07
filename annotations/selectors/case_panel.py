"""Reads for the case panel of a Gastric-X item's review and adjudication pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch

from annotations.formats.gastricx import REPORT_KINDS
from annotations.models import Box, Case, Item, ItemKind, Volume
from annotations.selectors import visibility
from annotations.selectors.cases import phase_sorted


@dataclass
class CasePanelData:
    case: Case
    volumes: list[Volume]
    # The reports as they are now: an open item's reference once reviewed, else as imported.
    reports: dict[str, str] = field(default_factory=dict)
    box_ids: set[int] = field(default_factory=set)  # the boxes this user may see here


def case_panel_data(item: Item, *, user: Any, gold: bool, blinded: bool) -> CasePanelData:
    """The item's case with its volumes, boxes and reports, cut to what `user` may see.

    `gold` False (a running human baseline) hides reports and boxes; `blinded` (an open review
    of the item) keeps only imported boxes and the user's own.
    """
    assert item.case_id is not None, "only an item of a case has a case panel"
    case = (
        Case.objects.select_related("benchmark", "endoscopy_image")
        .prefetch_related("indicators")
        .get(pk=item.case_id)
    )
    boxes = Box.objects.select_related("author").order_by("id")
    volumes = phase_sorted(case.volumes.prefetch_related(Prefetch("boxes", queryset=boxes)))
    data = CasePanelData(case=case, volumes=volumes)
    if not gold:
        case.tnm = ""  # the classification items' gold; the page never shows it
        return data
    current: dict[str, str] = {}
    for target, reference in Item.objects.filter(case=case, kind=ItemKind.OPEN).values_list(
        "target", "reference"
    ):
        kind = (target or {}).get("report")
        if kind in REPORT_KINDS and reference:
            current[kind] = reference
    data.reports = {
        kind: current.get(kind) or case.reports.get(kind)
        for kind in REPORT_KINDS
        if current.get(kind) or case.reports.get(kind)
    }
    # The one rule of selectors.visibility: the case's blinding, then the item's own.
    data.box_ids = visibility.case_box_ids_visible_to(user, case, item_blinded=blinded)
    return data
