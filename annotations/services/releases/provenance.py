"""The items of NAME.json with their provenance, read a chunk at a time (constant queries per chunk).

Provenance says where an item came from and how it was decided, never who decided it: revisions
(version, reason, date), a summary of the reviews (counts of verdicts and reasons), the
adjudication, 2D boxes (pixels), the CT volumes of a Gastric-X case with their 3D boxes (voxels and
LPS millimetres, from `box_export`) and degradation parameters.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from django.db.models import QuerySet
from django.utils.translation import gettext

from annotations.formats.jsonexport import dumps_canonical
from annotations.models import Adjudication, Box, Case, ItemImage, ItemRevision, Review
from annotations.services.box_export import case_boxes_for_export
from annotations.services.errors import DomainError
from annotations.services.pair_export import pair_json_fields
from annotations.services.releases.rows import ItemRow, raw_rows, utc_date
from annotations.services.releases.sources import ImageRef


class ChunkProvenance:
    """Revisions, reviews, adjudications and boxes of one chunk of items, in five queries."""

    def __init__(self, items: Sequence[ItemRow], ids: QuerySet) -> None:
        self.revisions = _revisions(ids)
        self.reviews = _reviews(ids)
        self.adjudications = _adjudications(ids)
        self.boxes_2d = _boxes_2d(ItemImage.objects.filter(item_id__in=ids).values("image_id"))
        self.boxes_3d = _case_boxes({item.case_id for item in items if item.case_id})

    def boxes(self, item: ItemRow, refs: Sequence[ImageRef]) -> list[dict]:
        image_ids = {ref.id for ref in refs}
        return [
            box
            for owner, image_id, box in self.boxes_2d
            if owner == item.id or (owner is None and image_id in image_ids)
        ]

    def volumes(self, item: ItemRow) -> list[dict]:
        return self.boxes_3d.get(item.case_id, []) if item.case_id else []


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
        "reviews": chunk.reviews.get(item.id, _empty_reviews()),
        "adjudication": chunk.adjudications.get(item.id),
        "boxes": chunk.boxes(item, refs),
        "volumes": chunk.volumes(item),
        "degradation": _degradation(item),
    }
    if withhold:
        data["answer"] = data["answer_text"] = None
        data["extra"] = {k: v for k, v in item.extra.items() if k != "gt"}
        data["withheld"] = True
    return data


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


def _revisions(ids: QuerySet) -> dict[int, list[dict]]:
    found: dict[int, list[dict]] = defaultdict(list)
    rows = (
        ItemRevision.objects.filter(item_id__in=ids)
        .order_by("item_id", "version")
        .values_list("item_id", "version", "replaced_version", "reason", "created_at")
    )
    for item_id, version, replaced, reason, created in raw_rows(rows):
        found[item_id].append(
            {
                "version": version,
                "replaced_version": replaced,
                "reason": reason,
                "date": utc_date(created),
            }
        )
    return found


def _empty_reviews() -> dict:
    return {"count": 0, "verdicts": {}, "reject_reasons": {}}


def _reviews(ids: QuerySet) -> dict[int, dict]:
    found: dict[int, dict] = {}
    rows = (
        Review.objects.filter(item_id__in=ids)
        .order_by("item_id", "id")
        .values_list("item_id", "verdict", "reason", "answerable", "realism", "severity_judgement")
    )
    for item_id, verdict, reason, answerable, realism, severity in raw_rows(rows):
        summary = found.setdefault(item_id, {**_empty_reviews(), "_pair": Counter()})
        summary["count"] += 1
        summary["verdicts"][verdict] = summary["verdicts"].get(verdict, 0) + 1
        if reason:
            summary["reject_reasons"][reason] = summary["reject_reasons"].get(reason, 0) + 1
        if answerable is not None:
            summary["_pair"]["answerable" if answerable else "unanswerable"] += 1
        if realism is not None:
            summary["_pair"][f"realism_{realism}"] += 1
        if severity:
            summary["_pair"][f"severity_{severity}"] += 1
    for summary in found.values():
        pair = summary.pop("_pair")
        if pair:
            summary["pair"] = dict(sorted(pair.items()))
    return found


def _adjudications(ids: QuerySet) -> dict[int, dict]:
    found: dict[int, dict] = {}
    rows = (
        Adjudication.objects.filter(item_id__in=ids)
        .order_by("item_id", "created_at", "id")
        .values_list("item_id", "choice", "rejected", "item_version", "created_at")
    )
    for item_id, choice, rejected, version, created in raw_rows(rows):
        # The latest decision is the one in force.
        found[item_id] = {
            "choice": choice,
            "rejected": bool(rejected),  # SQLite gives 0/1
            "item_version": version,
            "date": utc_date(created),
        }
    return found


def _boxes_2d(image_ids: QuerySet) -> list[tuple[int | None, int, dict]]:
    """(owner item or None, image id, box) of the boxes drawn on the chunk's images."""
    rows = (
        Box.objects.filter(volume__isnull=True, image_id__in=image_ids)
        .exclude(state__in=Box.LEFT_OUT)
        .order_by("id")
        .values_list(
            "item_id", "image_id", "image__sha256", "label", "state", "x0", "y0", "x1", "y1"
        )
    )
    return [
        (
            owner,
            image_id,
            {
                "kind": "2d",
                "image": sha,
                "label": label,
                "state": state,
                "pixels": [x0, y0, x1, y1],
            },
        )
        for owner, image_id, sha, label, state, x0, y0, x1, y1 in raw_rows(rows)
    ]


def _case_boxes(case_ids: set[int]) -> dict[int, list[dict]]:
    """Per Gastric-X case of the chunk: each phase's geometry and its 3D boxes (voxel and mm),
    as `box_export.case_boxes_for_export` gives them (two queries per case)."""
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
