"""A release's files per task, besides NAME.tsv: the rules that make classification items
multiple-choice rows, and the NAME_localization.json and NAME_retrieval.json documents.

Both JSON files are gathered while the export walks its items and written at its end: they hold
a few numbers per box or report (no image data), so they stay small next to the TSVs.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from annotations.formats.coco import write_coco
from annotations.formats.jsonexport import dumps_canonical
from annotations.formats.stream import image_file_name, quoted
from annotations.imaging.geometry import VolumeGeometry, box_voxel_to_mm
from annotations.inference.task_prompts import (
    BOX_IMAGE_LABELS,
    ENDOSCOPY_LABEL,
    build_localization_prompt,
    ct_slice_label,
    item_image_label,
    report_question,
)

REPORT_TSV_COLUMNS = ("index", "image", "question", "answer", "category", "l2-category", "split")
# One row per image a localization item is asked on (its index: the item's index x 10000 + the
# slice, or the item's index for a 2D item), the question cell the prompt runs send.
LOCALIZATION_TSV_COLUMNS = (
    "index",
    "image",
    "question",
    "answer",
    "category",
    "item_index",
    "slice",
    "split",
)
LOCALIZATION_SCHEMA = "clinreview.localization/1"
RETRIEVAL_SCHEMA = "clinreview.retrieval/1"
LOCALIZATION_DESCRIPTION = {
    "images": "COCO images: a CT slice (case_id, phase, slice = z of the box centre, "
    "(z0 + z1 - 1) // 2; width x height = columns x rows of the volume; the slice itself is "
    "not in the release, render it from the case's CT) or a stored image (case_id, image, "
    "sha256, file_name as in images/).",
    "annotations": "COCO boxes in pixels, bbox = [x, y, w, h], with the item_index they belong "
    "to; on a CT slice, the 3D box's section (x = column, y = row).",
    "boxes_3d": "3D targets: voxel [x0, y0, z0, x1, y1, z1] (end exclusive, x = column, "
    "y = row, z = slice) and mm (LPS centres of voxel (x0, y0, z0) and (x1-1, y1-1, z1-1)), "
    "with the series geometry they were computed from.",
    "items": "every localization item: index, case_id, label, phase or image, split, and for "
    "a 3D target the CT slices it is asked on (inside the box and one beyond each end; the "
    "release's COCO figures are over them); a withheld item has no box nor slices here (they "
    "are in NAME_test_answers.json).",
}
RETRIEVAL_DESCRIPTION = {
    "cases": "the case side: per case_id its images, the endoscopy image by sha256 and per CT "
    "phase the middle axial slice (z = size_z // 2, soft-tissue window 400/40) by series_uid.",
    "pairs": "one report per pair: index, report_kind, report text, split and the case_id it "
    "belongs to. Report-to-case retrieval ranks every case for each report, case-to-report "
    "ranks every report for each case. A withheld pair has no case_id here (see "
    "NAME_test_answers.json).",
}


def report_columns(*, l2_category: bool, split: bool) -> list[str]:
    """NAME_report.tsv's header: VLMEvalKit's open-VQA columns, and the groups that hold values."""
    wanted = {"l2-category": l2_category, "split": split}
    return [column for column in REPORT_TSV_COLUMNS if wanted.get(column, True)]


def volume_target(*, index: int, case_id: str | None, label: str, volume: Any, voxel) -> tuple:
    """(3D entry, slice image, pixel box) of a 3D target on `volume` (phase, size_x/y/z,
    spacing, origin, direction, series_uid): the box in voxels and LPS mm, and its section on
    the axial slice through its centre."""
    x0, y0, z0, x1, y1, z1 = (int(v) for v in voxel)
    geometry = VolumeGeometry.of(volume)
    entry = {
        "item_index": index,
        "case_id": case_id,
        "label": label,
        "phase": volume.phase,
        "voxel": [x0, y0, z0, x1, y1, z1],
        "mm": box_voxel_to_mm([x0, y0, z0, x1, y1, z1], geometry),
        "series_uid": volume.series_uid,
        "shape_zyx": [volume.size_z, volume.size_y, volume.size_x],
        "spacing": list(geometry.spacing),
        "origin": list(geometry.origin),
        "direction": list(geometry.direction),
    }
    z = (z0 + z1 - 1) // 2
    image = {
        "case_id": case_id,
        "phase": volume.phase,
        "slice": z,
        "series_uid": volume.series_uid,
        "file_name": f"{case_id}_{volume.phase}_z{z:04d}.png",
        "width": volume.size_x,
        "height": volume.size_y,
    }
    return entry, image, [x0, y0, x1, y1]


class Localization:
    """NAME_localization.json: COCO 2D boxes (on the CT slice through each 3D box's centre and
    on stored images), the 3D boxes in voxels and LPS millimetres, and the items."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = list(labels)
        self.items: list[dict[str, Any]] = []
        self.images: list[dict[str, Any]] = []
        self.boxes: list[dict[str, Any]] = []
        self.boxes_3d: list[dict[str, Any]] = []
        self._image_ids: dict[str, int] = {}

    def item(self, **entry: Any) -> None:
        """A localization item (index, case_id, label, split, phase or image), public or not."""
        self.items.append(entry)

    def box(self, *, index: int, label: str, image: dict, box: Sequence[float], box_3d=None):
        """A target: its pixel box on `image` (a CT slice or a stored image), and its 3D entry."""
        key = dumps_canonical(image)
        if key not in self._image_ids:
            self._image_ids[key] = len(self.images) + 1
            self.images.append({"id": self._image_ids[key], **image})
        x0, y0, x1, y1 = box
        self.boxes.append(
            {
                "image_id": self._image_ids[key],
                "label": label,
                "x": x0,
                "y": y0,
                "width": x1 - x0,
                "height": y1 - y0,
                "item_index": index,
            }
        )
        if box_3d is not None:
            self.boxes_3d.append(box_3d)

    def write(self, out: IO[bytes], header: Mapping[str, Any]) -> None:
        head = {**header, "schema": LOCALIZATION_SCHEMA, "description": LOCALIZATION_DESCRIPTION}
        sections = {"boxes_3d": self.boxes_3d, "items": self.items}
        write_coco(out, self.images, self.boxes, self.labels, header=head, sections=sections)


class Retrieval:
    """NAME_retrieval.json: the report ↔ case pairs and each case's side."""

    def __init__(self) -> None:
        self.cases: dict[str, dict[str, Any]] = {}
        self.pairs: list[dict[str, Any]] = []

    def case(self, case_id: str, images: Iterable[dict]) -> None:
        self.cases.setdefault(case_id, {"case_id": case_id, "images": list(images)})

    def pair(self, *, index: int, case_id: str | None, kind: str, report: str, split: str) -> None:
        self.pairs.append(
            {
                "index": index,
                "case_id": case_id,
                "report_kind": kind,
                "report": report,
                "split": split,
            }
        )

    def write(self, out: IO[bytes], header: Mapping[str, Any]) -> None:
        document = {
            **header,
            "schema": RETRIEVAL_SCHEMA,
            "description": RETRIEVAL_DESCRIPTION,
            "cases": [self.cases[key] for key in sorted(self.cases)],
            "pairs": self.pairs,
        }
        out.write((dumps_canonical(document) + "\n").encode("utf-8"))


def report_cells(item: Any, question: str, category: str, l2_category: str) -> dict[str, str]:
    """The quoted text cells of an open item's NAME_report.tsv row: `question` the whole text
    the item is asked with (`report_prompt`), its answer the reference."""
    return {
        "index": quoted(item.source_index),
        "question": quoted(question),
        "answer": quoted(item.reference),
        "category": quoted(category),
        "l2-category": quoted(l2_category),
        "split": quoted(item.split),
    }


def report_pictures(kind: str, case: Any, refs: Sequence[Any]) -> dict[Hashable, Any]:
    """The images of an open item's row by key, as runs show them to a model: without a case
    its own images; else the case's endoscopy image (not for a CT report) and the middle axial
    slice of each CT phase (not for an endoscopy report), keyed ("ct", volume id, z)."""
    if case is None:
        return {ref.id: ref for ref in refs}
    pictures: dict[Hashable, Any] = {}
    if kind != "ct" and case.endoscopy is not None:
        pictures[case.endoscopy.id] = case.endoscopy
    if kind != "endoscopy":
        for volume in case.volumes:
            pictures[("ct", volume.id, volume.size_z // 2)] = volume
    return pictures


def report_prompt(
    kind: str, item: Any, pictures: Mapping[Hashable, Any], indicators: Sequence[Mapping]
) -> str:
    """The whole text an open item is asked with (`task_prompts.report_question`), its images
    named as runs name them: `pictures` as `report_pictures` gives them."""
    labels = []
    for number, (key, source) in enumerate(pictures.items(), start=1):
        if isinstance(key, tuple):  # ("ct", volume id, z)
            labels.append(ct_slice_label(source.phase, key[2], source.size_z))
        elif item.case_id:
            labels.append(ENDOSCOPY_LABEL)
        else:
            labels.append(item_image_label(number))
    if not labels:  # runs cannot ask it either (no image to write from): the question alone
        return item.question
    return report_question(kind, question=item.question, image_labels=labels, indicators=indicators)


def localization_rows(
    *,
    index: int,
    label: str,
    split: str,
    box: Sequence[float],
    image: Mapping[str, Any],
    slices: Sequence[int] | None,
    voxel: Sequence[float] | None,
    size_z: int = 0,
    on_case: bool = True,
) -> list[dict[str, Any]]:
    """NAME_localization.tsv's rows of one item: per image asked (each slice of a 3D target,
    or a 2D item's image) the prompt runs send (`build_localization_prompt`), the truth on it
    ("[x0, y0, x1, y1]" in pixels, or "none" beyond the box) and the slice."""
    width, height = int(image["width"]), int(image["height"])
    found = []
    for z in slices if slices is not None else [None]:
        truth: list[float] | None
        if z is None:
            image_label, truth = BOX_IMAGE_LABELS[on_case], list(box)
        else:
            assert voxel is not None  # slices are of a 3D target
            image_label = ct_slice_label(str(image["phase"]), z, size_z)
            inside = voxel[2] <= z < voxel[5]
            truth = [voxel[0], voxel[1], voxel[3], voxel[4]] if inside else None
        question = build_localization_prompt(
            label, image_label=image_label, width=width, height=height
        )
        found.append(
            {
                "index": quoted(index * 10000 + z if z is not None else index),
                "question": quoted(question),
                "answer": quoted(dumps_canonical(truth) if truth else "none"),
                "category": quoted(label),
                "item_index": quoted(index),
                "slice": quoted("" if z is None else z),
                "split": quoted(split),
                "z": z,
            }
        )
    return found


def case_images(case: Any) -> list[dict[str, Any]]:
    """The case side of a retrieval pair: the endoscopy image and each phase's middle slice."""
    found = [{"image": "endoscopy", "sha256": case.endoscopy.sha256}] if case.endoscopy else []
    return found + [
        {"phase": v.phase, "series_uid": v.series_uid, "slice": v.size_z // 2} for v in case.volumes
    ]


def image_target(case: Any, refs: Sequence[Any], target: Mapping[str, Any]) -> dict | None:
    """The image a 2D target is on (the case's endoscopy image, else the item's first image) as
    a COCO image entry; None without an image or a four-number box."""
    ref = case.endoscopy if case is not None and case.endoscopy else (refs[0] if refs else None)
    box = target.get("box")
    if ref is None or not (isinstance(box, list) and len(box) == 4):
        return None
    return {
        "case_id": case.code if case is not None else None,
        "image": "endoscopy" if case is not None and case.endoscopy else "item",
        "sha256": ref.sha256,
        "file_name": image_file_name(ref.sha256, ref.format),
        "width": ref.width,
        "height": ref.height,
    }


def public_target(target: Mapping[str, Any] | None) -> dict[str, Any]:
    """What NAME.json shows of a withheld localization item's target: what to find, not where."""
    return {k: v for k, v in (target or {}).items() if k in ("label", "phase", "image")}


def numbers(values: Iterable[Any]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def hidden_keys(hidden: Iterable[Mapping[str, Any]]) -> tuple[set[tuple], set[tuple]]:
    """Keys of the targets of withheld items: 2D (label, box), 3D (case, phase, label, voxel)."""
    flat, deep = set(), set()
    for t in hidden:
        if isinstance(t.get("voxel"), list):
            deep.add((t.get("case"), t.get("phase"), t.get("label"), numbers(t["voxel"])))
        elif isinstance(t.get("box"), list):
            flat.add((t.get("label"), numbers(t["box"])))
    return flat, deep


def without_targets(blocks: list[dict], case_id: int | None, hidden: set[tuple]) -> list[dict]:
    """A case's volume blocks (`box_export.case_boxes_for_export`) without the 3D boxes that
    are withheld targets (`hidden`: the 3D keys of `hidden_keys`)."""
    if not hidden:
        return blocks
    return [
        {
            **block,
            "boxes": [
                box
                for box in block["boxes"]
                if (case_id, block["phase"], box["label"], numbers(box["voxel"])) not in hidden
            ],
        }
        for block in blocks
    ]


def coco_without_targets(boxes: Iterable[dict], hidden: set[tuple]) -> Iterator[dict]:
    """COCO boxes (x, y, width, height) without the withheld 2D targets (2D keys)."""
    for box in boxes:
        corners = (box["x"], box["y"], box["x"] + box["width"], box["y"] + box["height"])
        if (box["label"], numbers(corners)) not in hidden:
            yield box


def coco_targets(
    found: Localization, images: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The localization targets as more (images, boxes) of NAME_coco.json beside `images` (its
    stored images): a target on a stored image already there is put on it, every other image
    (a CT slice, a stored image not yet there) gets the next free id."""
    by_sha = {image["sha256"]: image["id"] for image in images if image.get("sha256")}
    next_id = max((int(image["id"]) for image in images), default=0) + 1
    new_images: list[dict[str, Any]] = []
    ids: dict[int, int] = {}
    for image in found.images:
        known = by_sha.get(image["sha256"]) if "phase" not in image and "sha256" in image else None
        if known is None:
            known, next_id = next_id, next_id + 1
            new_images.append({**image, "id": known})
        ids[image["id"]] = known
    boxes = [{**box, "image_id": ids[box["image_id"]]} for box in found.boxes]
    return new_images, boxes


def task_layout(name: str, files: Any) -> dict[str, Any]:
    """The manifest's layout entries of the task files `files` has (None where a kind is absent:
    report_tsv, report_test, localization, retrieval), with their counts."""
    layout: dict[str, Any] = {}
    if files.report_tsv is not None:
        layout["report"] = {"tsv": f"{name}_report.tsv", "rows": files.report_tsv.rows}
        if files.report_test is not None:
            test = {"test_tsv": f"{name}_report_test.tsv", "test_rows": files.report_test.rows}
            layout["report"].update(test)
    if files.localization is not None:
        found = files.localization
        layout["localization"] = {
            "json": f"{name}_localization.json", "items": len(found.items),
            "images": len(found.images), "boxes_2d": len(found.boxes),
            "boxes_3d": len(found.boxes_3d),
        }  # fmt: skip
        if files.localization_tsv is not None:
            layout["localization"]["tsv"] = f"{name}_localization.tsv"
            layout["localization"]["tsv_rows"] = files.localization_tsv.rows
    if files.retrieval is not None:
        layout["retrieval"] = {
            "json": f"{name}_retrieval.json",
            "pairs": len(files.retrieval.pairs),
            "cases": len(files.retrieval.cases),
        }
    return layout
