"""The files of a release's non-multiple-choice items: NAME_report.tsv (open items),
NAME_localization.json (box items), NAME_retrieval.json (retrieval pairs); the answers of
their withheld items go to NAME_test_answers.json like the others'."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext
from pybase64 import b64encode

from annotations.formats import stream, taskfiles
from annotations.formats.stream import TsvWriter, quoted
from annotations.models import BoxLabel, ItemKind
from annotations.selectors import release_rows as rows
from annotations.selectors.release_rows import CaseSide, ImageRef, ItemRow
from annotations.services.errors import DomainError
from annotations.services.runs.tasks import CT_WINDOW, report_kind

_LABEL_ERRORS = {
    "missing": "Classification item %(index)s asks for the label set '%(field)s', which the "
    "benchmark does not have.",
    "too_many": "The label set '%(field)s' holds more than 26 labels: VLMEvalKit reads only "
    "options A to Z, so its classification items cannot be released as multiple choice.",
    "outside": "Classification item %(index)s answers '%(answer)s', which is not in the label "
    "set '%(field)s'.",
}


def as_choice(item: ItemRow, label_sets: dict) -> ItemRow:
    """A classification item as a multiple-choice row: its label set as options, the letter of
    its reviewed label as answer; refused (DomainError) when it cannot be one."""
    field = str((item.target or {}).get("field") or "label")
    try:
        options, letter = taskfiles.label_choice(label_sets.get(field), item.answer, field)
    except taskfiles.LabelSetError as error:
        words = {"index": item.source_index, "field": field, "answer": item.answer}
        raise DomainError(gettext(_LABEL_ERRORS[error.problem]) % words) from None
    return replace(item, options=options, answer=letter)


class TaskFiles:
    """Writes the task files of one export (`export`: its `_file`, images, answers, report)."""

    def __init__(self, export, kinds: dict[str, dict[str, int]]) -> None:
        self.export, self.cases = export, {}
        self.report_tsv = self.report_test = self.localization = self.retrieval = None
        self.withheld = export.options.withhold_split
        opened = kinds.get(ItemKind.OPEN)
        if opened:
            columns = taskfiles.report_columns(
                l2_category=bool(opened["l2"]), split=bool(opened["split"])
            )
            self.report_tsv = TsvWriter(export._file("_report.tsv"), columns)
            if self.withheld:
                test_columns = [c for c in columns if c not in stream.ANSWER_COLUMNS]
                self.report_test = TsvWriter(export._file("_report_test.tsv"), test_columns)
        if kinds.get(ItemKind.BOX):
            self.localization = taskfiles.Localization([value for value, _ in BoxLabel.choices])
            self.localization_out = export._file("_localization.json")
        if kinds.get(ItemKind.RETRIEVAL):
            self.retrieval = taskfiles.Retrieval()
            self.retrieval_out = export._file("_retrieval.json")

    def chunk(self, chunk: list[ItemRow]) -> None:
        ids = {i.case_id for i in chunk if i.case_id and i.kind not in (ItemKind.MCQ, "label")}
        self.cases = rows.chunk_cases(ids)

    def write(self, item: ItemRow, refs: list[ImageRef], withhold: bool) -> None:
        case = self.cases.get(item.case_id) if item.case_id else None
        if item.kind == ItemKind.OPEN:
            self._report(item, refs, case, withhold)
        elif item.kind == ItemKind.BOX:
            self._box(item, refs, case, withhold)
        elif item.kind == ItemKind.RETRIEVAL:
            self._pair(item, case, withhold)

    def _report(self, item, refs, case: CaseSide | None, withhold: bool) -> None:
        category, l2 = self.export.report_values(item)
        cells = {
            "index": quoted(item.source_index),
            "question": quoted(item.question),
            "answer": quoted(item.reference),
            "category": quoted(category),
            "l2-category": quoted(l2),
            "split": quoted(item.split),
        }
        self.export.note_formulas(item, cells)
        pictures = self._pictures(item, refs, case)
        keys = list(pictures)
        if withhold:
            answer = {"index": item.source_index, "kind": item.kind, "answer": item.reference}
            self.export.answers.write(answer, fast=False)
            self.report_test.write(cells, item.source_index, keys, self._base64(pictures))
        else:
            self.report_tsv.write(cells, item.source_index, keys, self._base64(pictures))

    def _pictures(self, item, refs, case: CaseSide | None) -> dict:
        """The images a model is shown for an open item, as runs show them (`case_pictures`):
        without a case its own images; else the endoscopy image (not for a CT report) and the
        middle axial slice of each CT phase (not for an endoscopy report)."""
        if case is None:
            return {ref.id: ref for ref in refs}
        kind = report_kind(item)
        pictures: dict = {}
        if kind != "ct" and case.endoscopy is not None:
            pictures[case.endoscopy.id] = case.endoscopy
        if kind != "endoscopy":
            for volume in case.volumes:
                pictures[("ct", volume.id, volume.size_z // 2)] = (case.code, volume)
        return pictures

    def _base64(self, pictures: dict):
        def encode(key) -> bytes:
            source = pictures[key]
            if isinstance(source, ImageRef):
                return b64encode(self.export.images.data(source))
            return b64encode(_slice_png(*source, key[2]))

        return encode

    def _box(self, item, refs, case: CaseSide | None, withhold: bool) -> None:
        target = item.target or {}
        label, code = str(target.get("label") or "tumor"), case.code if case else None
        voxel, phase = target.get("voxel"), target.get("phase")
        common = {"index": item.source_index, "case_id": code, "label": label, "split": item.split}
        if isinstance(voxel, list) and len(voxel) == 6:
            volume = case.volume(phase) if case else None
            if volume is None:
                raise DomainError(
                    gettext(
                        "Localization item %(index)s is on phase %(phase)s, which its case lacks."
                    )
                    % {"index": item.source_index, "phase": phase}
                )
            entry, image, box = taskfiles.volume_target(
                index=item.source_index, case_id=code, label=label, volume=volume, voxel=voxel
            )
            self.localization.item(**common, phase=phase)
        else:
            image, box, entry = self._image_of(item, refs, case, target), target.get("box"), None
            self.localization.item(**common, image=image["image"])
        if withhold:
            answer = {"index": item.source_index, "kind": item.kind, "image": image, "box": box}
            self.export.answers.write({**answer, "box_3d": entry}, fast=False)
        else:
            self.localization.box(
                index=item.source_index, label=label, image=image, box=box, box_3d=entry
            )

    def _image_of(self, item, refs, case: CaseSide | None, target: dict) -> dict:
        ref = case.endoscopy if case and case.endoscopy else (refs[0] if refs else None)
        box = target.get("box")
        if ref is None or not (isinstance(box, list) and len(box) == 4):
            raise DomainError(
                gettext("Localization item %(index)s has no box on an image or a CT phase.")
                % {"index": item.source_index}
            )
        return {
            "case_id": case.code if case else None,
            "image": "endoscopy" if case and case.endoscopy else "item",
            "sha256": ref.sha256,
            "file_name": stream.image_file_name(ref.sha256, ref.format),
            "width": ref.width,
            "height": ref.height,
        }

    def _pair(self, item, case: CaseSide | None, withhold: bool) -> None:
        if case is None:
            raise DomainError(
                gettext("Retrieval pair %(index)s has no case.") % {"index": item.source_index}
            )
        images = [{"image": "endoscopy", "sha256": case.endoscopy.sha256}] if case.endoscopy else []
        images += [
            {"phase": v.phase, "series_uid": v.series_uid, "slice": v.size_z // 2}
            for v in case.volumes
        ]
        self.retrieval.case(case.code, images)
        if withhold:
            answer = {"index": item.source_index, "kind": item.kind, "case_id": case.code}
            self.export.answers.write(answer, fast=False)
        self.retrieval.pair(
            index=item.source_index,
            case_id=None if withhold else case.code,
            kind=report_kind(item),
            report=item.reference,
            split=item.split,
        )

    def close(self, header: dict) -> None:
        if self.localization is not None:
            self.localization.write(self.localization_out, header)
        if self.retrieval is not None:
            self.retrieval.write(self.retrieval_out, header)

    def layout(self) -> dict:
        name, layout = self.export.name, {}
        if self.report_tsv is not None:
            layout["report"] = {"tsv": f"{name}_report.tsv", "rows": self.report_tsv.rows}
            if self.report_test is not None:
                layout["report"].update(
                    test_tsv=f"{name}_report_test.tsv", test_rows=self.report_test.rows
                )
        if self.localization is not None:
            found = self.localization
            layout["localization"] = {
                "json": f"{name}_localization.json", "items": len(found.items),
                "images": len(found.images), "boxes_2d": len(found.boxes),
                "boxes_3d": len(found.boxes_3d),
            }  # fmt: skip
        if self.retrieval is not None:
            layout["retrieval"] = {
                "json": f"{name}_retrieval.json",
                "pairs": len(self.retrieval.pairs),
                "cases": len(self.retrieval.cases),
            }
        return layout


def _slice_png(case_code: str, volume, z: int) -> bytes:
    from annotations.imaging.window import render_slice_png
    from annotations.selectors.cases import memmaps

    try:
        return render_slice_png(
            memmaps.get(Path(settings.MEDIA_ROOT) / volume.cache_path), z, *CT_WINDOW
        )
    except (OSError, ValueError):
        raise DomainError(
            gettext("The %(phase)s CT of case %(case)s cannot be read; import it again.")
            % {"phase": volume.phase, "case": case_code}
        ) from None
