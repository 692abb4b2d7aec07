"""The files of a release's other item kinds: NAME_report.tsv (open items; NAME_report_test.tsv
for a withheld split), NAME_localization.json (box items), NAME_retrieval.json (retrieval
pairs). The answers of withheld items go to NAME_test_answers.json with the others'."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol, TypedDict

from django.conf import settings
from django.utils.translation import gettext
from pybase64 import b64encode

from annotations.formats import stream, taskfiles
from annotations.formats.release_layout import ExportOptions
from annotations.formats.stream import HashingFile, JsonItems, TsvWriter
from annotations.inference.task_prompts import box_slices
from annotations.models import BoxLabel, ItemKind
from annotations.selectors import release_rows as rows
from annotations.selectors.release_rows import CaseSide, ImageRef, ItemRow, KindCount
from annotations.services.errors import DomainError


def as_choice(item: ItemRow, label_sets: dict) -> ItemRow:
    """A classification item as a multiple-choice row: its label set as options A, B, … (in
    the set's order, as runs ask it), the letter of its reviewed label as answer."""
    from annotations.inference.task_prompts import label_options, letter_of

    field = str((item.target or {}).get("field") or "label")
    # Sets that are missing or past 26 labels were refused before the export (check_label_sets).
    options = label_options(label_sets[field])
    letter = letter_of(options, item.answer)
    if not letter:
        raise DomainError(
            gettext(
                "Classification item %(index)s answers '%(answer)s', not a label of '%(field)s'."
            )
            % {"index": item.source_index, "answer": item.answer, "field": field}
        )
    return replace(item, options=list(options.values()), answer=letter)


class Export(Protocol):
    """What the task files take from their export (`export._Export`)."""

    options: ExportOptions
    images: rows.ReleaseImages
    answers: JsonItems | None

    def _file(self, suffix: str) -> HashingFile: ...

    def report_values(self, item: ItemRow) -> tuple[str, str]: ...

    def note_formulas(self, item: ItemRow, cells: dict[str, str]) -> None: ...


class _Where(TypedDict):
    index: int
    label: str


class TaskFiles:
    """The task files of one export."""

    def __init__(self, export: Export, kinds: dict[str, KindCount]) -> None:
        # What runs show a model (Gastric-X only: the runs' imports are paid where needed).
        from annotations.services.runs.tasks import report_kind

        self.export = export
        self.cases: dict[int, CaseSide] = {}
        self.indicators: dict[int, list[dict]] = {}
        # report_kind reads only `target` and `task`, which a row has too; it is annotated `Item`.
        self.report_kind: Callable[[ItemRow], str] = report_kind  # type: ignore[assignment]
        self.report_tsv: TsvWriter | None = None
        self.report_test: TsvWriter | None = None
        self.localization: taskfiles.Localization | None = None
        self.retrieval: taskfiles.Retrieval | None = None
        if opened := kinds.get(ItemKind.OPEN):
            columns = taskfiles.report_columns(
                l2_category=opened["l2"] > 0, split=opened["split"] > 0
            )
            self.report_tsv = TsvWriter(export._file("_report.tsv"), columns, lists=True)
            if export.options.withhold_split:
                test = [c for c in columns if c not in stream.ANSWER_COLUMNS]
                self.report_test = TsvWriter(export._file("_report_test.tsv"), test, lists=True)
        self.localization_tsv: TsvWriter | None = None
        if kinds.get(ItemKind.BOX):
            self.localization = taskfiles.Localization([value for value, _ in BoxLabel.choices])
            self.localization_out = export._file("_localization.json")
            self.localization_tsv = TsvWriter(
                export._file("_localization.tsv"), taskfiles.LOCALIZATION_TSV_COLUMNS, lists=True
            )
        if kinds.get(ItemKind.RETRIEVAL):
            self.retrieval = taskfiles.Retrieval()
            self.retrieval_out = export._file("_retrieval.json")

    def chunk(self, chunk: list[ItemRow]) -> None:
        kinds = (ItemKind.OPEN, ItemKind.BOX, ItemKind.RETRIEVAL)
        self.cases = rows.chunk_cases({i.case_id for i in chunk if i.case_id and i.kind in kinds})
        self.indicators = rows.chunk_indicators(
            {i.case_id for i in chunk if i.case_id and i.kind == ItemKind.OPEN}
        )

    def write(self, item: ItemRow, refs: list[ImageRef], withhold: bool) -> None:
        case = self.cases.get(item.case_id) if item.case_id else None
        answer = {"index": item.source_index, "kind": item.kind}
        if item.kind == ItemKind.OPEN:
            category, l2 = self.export.report_values(item)
            kind = self.report_kind(item)
            pictures = taskfiles.report_pictures(kind, case, refs)
            indicators = self.indicators.get(item.case_id, []) if item.case_id else []
            question = taskfiles.report_prompt(kind, item, pictures, indicators)
            cells = taskfiles.report_cells(item, question, category, l2)
            self.export.note_formulas(item, cells)
            out = self.report_test if withhold else self.report_tsv
            assert out is not None  # opened for the export's open items (and its withheld split)
            out.write(cells, item.source_index, list(pictures), self._base64(pictures, case))
            answer["answer"] = item.reference
        elif item.kind == ItemKind.BOX:
            answer.update(self._box(item, refs, case, withhold))
        elif item.kind == ItemKind.RETRIEVAL:
            if case is None:
                raise DomainError(
                    gettext("Retrieval pair %(index)s has no case.") % {"index": item.source_index}
                )
            assert self.retrieval is not None  # opened for the export's retrieval pairs
            self.retrieval.case(case.code, taskfiles.case_images(case))
            self.retrieval.pair(
                index=item.source_index, case_id=None if withhold else case.code,
                kind=self.report_kind(item), report=item.reference, split=item.split,
            )  # fmt: skip
            answer["case_id"] = case.code
        if withhold:
            assert self.export.answers is not None  # opened for the withheld split
            self.export.answers.write(answer, fast=False)

    def _base64(self, pictures: dict, case):
        def encode(key) -> bytes:
            source = pictures[key]
            if isinstance(source, ImageRef):
                return b64encode(self.export.images.data(source))
            return b64encode(_slice_png(case.code, source, key[2]))

        return encode

    def _box(self, item: ItemRow, refs, case, withhold: bool) -> dict:
        """Record a localization item; its target (box and image, 3D entry) for the answers."""
        target, code = item.target or {}, case.code if case else None
        label, voxel, phase = str(target.get("label") or "tumor"), target.get("voxel"), None
        where = _Where(index=item.source_index, label=label)
        slices: list[int] | None = None
        if isinstance(voxel, list) and len(voxel) == 6:
            phase = target.get("phase")
            volume = case.volume(phase) if case else None
            if volume is None:
                raise DomainError(
                    gettext("Localization item %(index)s is on a CT phase its case lacks.")
                    % {"index": item.source_index}
                )
            box_3d, image, box = taskfiles.volume_target(
                **where, case_id=code, volume=volume, voxel=voxel
            )
            # The slices runs ask (beyond the box's ends too): the release's COCO figures'.
            z0, z1 = int(voxel[2]), int(math.ceil(voxel[5]))
            slices = list(box_slices(z0, z1, volume.size_z)[0])
        else:
            image, box, box_3d = taskfiles.image_target(case, refs, target), target.get("box"), None
            if image is None:
                raise DomainError(
                    gettext("Localization item %(index)s has no box on an image or a CT phase.")
                    % {"index": item.source_index}
                )
        place: dict = {"phase": phase} if phase else {"image": image["image"]}
        if slices is not None and not withhold:  # a withheld item's slices tell where it is
            place["slices"] = slices
        assert self.localization is not None  # opened for the export's box items
        self.localization.item(**where, case_id=code, split=item.split, **place)
        if not withhold:
            self.localization.box(**where, image=image, box=box, box_3d=box_3d)
            self._localization_rows(item, refs, case, image, box, slices, voxel)
        answer = {"image": image, "box": box, "box_3d": box_3d}
        return answer if slices is None else {**answer, "slices": slices}

    def _localization_rows(self, item, refs, case, image, box, slices, voxel) -> None:
        """NAME_localization.tsv: each image the item is asked on, with the prompt runs send
        (a withheld item has none: its slices would tell where its target is)."""
        assert self.localization_tsv is not None  # opened for the export's box items
        volume = case.volume(image["phase"]) if slices is not None and case else None
        rows = taskfiles.localization_rows(
            index=item.source_index, label=str((item.target or {}).get("label") or "tumor"),
            split=item.split, box=box, image=image, slices=slices, voxel=voxel,
            size_z=volume.size_z if volume else 0, on_case=case is not None,
        )  # fmt: skip
        for row in rows:
            z = row.pop("z")
            self.export.note_formulas(item, row)
            if volume is not None:
                png = _slice_png(case.code, volume, z)
                self.localization_tsv.write(
                    row, row["index"], [("ct", volume.id, z)], _as_base64(png)
                )
            else:
                ref = case.endoscopy if case is not None and case.endoscopy else refs[0]
                data = self.export.images.data(ref)
                self.localization_tsv.write(row, row["index"], [ref.id], _as_base64(data))

    def close(self, header: dict) -> None:
        # A HashingFile takes the bytes these writers write; their annotation asks for an IO.
        if self.localization is not None:
            self.localization.write(self.localization_out, header)  # type: ignore[arg-type]
        if self.retrieval is not None:
            self.retrieval.write(self.retrieval_out, header)  # type: ignore[arg-type]


def _as_base64(data: bytes) -> Callable[[object], bytes]:
    """A TsvWriter's `base64` for a row of one image already in hand."""
    return lambda _key: b64encode(data)


def _slice_png(case_code: str, volume: rows.VolumeRow, z: int) -> bytes:
    from annotations.imaging.window import render_slice_png
    from annotations.selectors.cases import memmaps
    from annotations.services.runs.tasks import CT_WINDOW

    try:
        voxels = memmaps.get(Path(settings.MEDIA_ROOT) / volume.cache_path)
        return render_slice_png(voxels, z, *CT_WINDOW)
    except (OSError, ValueError):
        raise DomainError(
            gettext("The %(phase)s CT of case %(case)s cannot be read; import it again.")
            % {"phase": volume.phase, "case": case_code}
        ) from None
