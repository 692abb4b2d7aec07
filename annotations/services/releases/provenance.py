"""The provenance of NAME.json's items (`formats.release_json`), read a chunk at a time: where
an item came from and how it was decided, never who decided it (revisions, a summary of
reviews, the adjudication, 2D boxes, a Gastric-X case's CT volumes and 3D boxes)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet
from django.utils.translation import gettext

from annotations.formats import taskfiles
from annotations.formats.jsonexport import dumps_canonical
from annotations.models import Case, ItemImage
from annotations.selectors.release_rows import (
    ImageRef,
    ItemRow,
    chunk_adjudications,
    chunk_boxes_2d,
    chunk_reviews,
    chunk_revisions,
    empty_reviews,
)
from annotations.services.errors import DomainError


class ChunkProvenance:
    """Revisions, reviews, adjudications and boxes of one chunk of items, in five queries."""

    def __init__(self, items: Sequence[ItemRow], ids: QuerySet, hidden: list[dict]) -> None:
        self.revisions = chunk_revisions(ids)
        self.reviews = chunk_reviews(ids)
        self.adjudications = chunk_adjudications(ids)
        self.boxes_2d = chunk_boxes_2d(ItemImage.objects.filter(item_id__in=ids).values("image_id"))
        self.boxes_3d = _case_boxes({item.case_id for item in items if item.case_id})
        # The targets of withheld localization items are left out of every item's boxes.
        self.hidden_2d, self.hidden_3d = taskfiles.hidden_keys(hidden)

    def boxes(self, item: ItemRow, refs: Sequence[ImageRef]) -> list[dict]:
        image_ids = {ref.id for ref in refs}
        return [
            box
            for owner, image_id, box in self.boxes_2d
            if (owner == item.id or (owner is None and image_id in image_ids))
            and (box["label"], taskfiles.numbers(box["pixels"])) not in self.hidden_2d
        ]

    def review_summary(self, item_id: int) -> dict:
        return self.reviews.get(item_id, empty_reviews())

    def volumes(self, item: ItemRow) -> list[dict]:
        blocks = self.boxes_3d.get(item.case_id, []) if item.case_id else []
        return taskfiles.without_targets(blocks, item.case_id, self.hidden_3d)


def _case_boxes(case_ids: set[int]) -> dict[int, list[dict]]:
    """Per Gastric-X case of the chunk: each phase's geometry and its 3D boxes (voxel and mm),
    as `box_export.case_boxes_for_export` gives them (two queries per case)."""
    if not case_ids:
        return {}
    # Gastric-X only: the CT geometry's imports (pydicom, SimpleITK) are paid where needed.
    from annotations.services.box_export import case_boxes_for_export

    found = {}
    for case_id in sorted(case_ids):
        found[case_id] = blocks = case_boxes_for_export(Case(pk=case_id))
        try:
            # NAME.json's fast encoder would write NaN as null: refuse it here, once per case.
            dumps_canonical(blocks)
        except ValueError:
            code = Case.objects.filter(pk=case_id).values_list("case_id", flat=True).first()
            raise DomainError(
                gettext(
                    "The CT geometry or boxes of case %(case)s hold a number that is not finite; "
                    "correct the case and build the release again."
                )
                % {"case": code}
            ) from None
    return found
