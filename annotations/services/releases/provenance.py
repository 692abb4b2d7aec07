"""The items of NAME.json with their provenance, read a chunk at a time: where an item came
from and how it was decided, never who decided it (revisions, a summary of reviews, the
adjudication, 2D boxes, a Gastric-X case's CT volumes and 3D boxes, degradation parameters)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import QuerySet
from django.utils.translation import gettext

from annotations.formats.jsonexport import dumps_canonical
from annotations.models import Case, ItemImage, ItemKind
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
from annotations.services.pair_export import pair_json_fields


class ChunkProvenance:
    """Revisions, reviews, adjudications and boxes of one chunk of items, in five queries."""

    def __init__(self, items: Sequence[ItemRow], ids: QuerySet, hidden: list[dict]) -> None:
        self.revisions = chunk_revisions(ids)
        self.reviews = chunk_reviews(ids)
        self.adjudications = chunk_adjudications(ids)
        self.boxes_2d = chunk_boxes_2d(ItemImage.objects.filter(item_id__in=ids).values("image_id"))
        self.boxes_3d = _case_boxes({item.case_id for item in items if item.case_id})
        # The targets of withheld localization items are left out of every item's boxes.
        self.hidden_2d = {(t.get("label"), str(t.get("box"))) for t in hidden}
        self.hidden_3d = {
            (t["case"], t.get("phase"), t.get("label"), str(t.get("voxel"))) for t in hidden
        }

    def boxes(self, item: ItemRow, refs: Sequence[ImageRef]) -> list[dict]:
        image_ids = {ref.id for ref in refs}
        return [
            box
            for owner, image_id, box in self.boxes_2d
            if (owner == item.id or (owner is None and image_id in image_ids))
            and (box["label"], str(box["pixels"])) not in self.hidden_2d
        ]

    def volumes(self, item: ItemRow) -> list[dict]:
        blocks = self.boxes_3d.get(item.case_id, []) if item.case_id else []
        if not self.hidden_3d:
            return blocks
        hidden = self.hidden_3d
        return [
            {
                **block,
                "boxes": [
                    box
                    for box in block["boxes"]
                    if (item.case_id, block["phase"], box["label"], str(box["voxel"])) not in hidden
                ],
            }
            for block in blocks
        ]


def json_item(
    item: ItemRow, refs: Sequence[ImageRef], chunk: ChunkProvenance, *, withhold: bool
) -> dict:
    """One item of NAME.json; a withheld item carries no answer (that goes to the answer key)."""
    data = {
        "index": item.source_index,
        "question": item.question,
        "hint": item.hint,
        "options": list(item.options),
        "answer": item.answer,
        "answer_text": item.answer_text,
        "taxonomy": item.taxonomy(),
        "extra": item.extra,
        "status": item.status,
        "revision": item.version,
        "images": [ref.sha256 for ref in refs],
        "source": {
            "benchmark": item.benchmark.name,
            "index": item.source_index,
            "dataset": item.dataset,
            "source": item.source,
            "case_id": item.case_code,
        },
        "revisions": chunk.revisions.get(item.id, []),
        "reviews": chunk.reviews.get(item.id, empty_reviews()),
        "adjudication": chunk.adjudications.get(item.id),
        "boxes": chunk.boxes(item, refs),
        "volumes": chunk.volumes(item),
        "degradation": _degradation(item),
    }
    if item.kind != ItemKind.MCQ:
        data.update(kind=item.kind, reference=item.reference, target=item.target)
    if withhold:
        data["answer"] = data["answer_text"] = None
        data["extra"] = {k: v for k, v in item.extra.items() if k != "gt"}
        data["withheld"] = True
        if item.kind != ItemKind.MCQ:
            _withhold_task(data, item)
    return data


def _withhold_task(data: dict, item: ItemRow) -> None:
    """A withheld open item keeps no reference, a box item no box, a retrieval pair no case."""
    if item.kind == ItemKind.OPEN:
        data["reference"] = None
    if item.kind == ItemKind.BOX:
        data["target"] = {
            k: v for k, v in (item.target or {}).items() if k in ("label", "phase", "image")
        }
    if item.kind == ItemKind.RETRIEVAL:
        data.update(images=[], boxes=[], volumes=[])
        data["source"]["case_id"] = None
        data["extra"].pop("case_id", None)


def _degradation(item: ItemRow) -> dict | None:
    if not (item.degradation_type or item.degradation_severity or item.clean_twin_id):
        return None
    pair = pair_json_fields(item)
    return {
        "type": item.degradation_type,
        "severity": item.degradation_severity,
        "params": pair["degradation_params"],
        "seed": pair["degradation_seed"],
        "clean_index": pair["clean_index"],
        "pair_id": pair["pair_id"],
    }


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
