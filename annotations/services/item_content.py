"""An item's reviewable content per kind: its comparable form, its validation, its application.

A multiple-choice item's content is question, hint, options and answer (as before item kinds);
an open item's (a report) its reference text; a classification item's its label, one of the
benchmark's label set for the item's field; a localization item's its target box; a retrieval
pair is confirmed or rejected, never edited. Question, hint and target are the item's own for
every kind but multiple choice: reviewers correct what the task asks for, not the task.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from annotations.imaging import ct
from annotations.models import Item, ItemKind, Volume
from annotations.models.item import LETTERS
from annotations.services.errors import DomainError

# The item fields a content sets, saved with every new revision.
CONTENT_FIELDS = ["question", "hint", "options", "answer", "reference", "target"]
_BOX_AXES = ("x", "y", "z")


def guess_kind(content: dict) -> str:
    """The kind of a stored content, from the keys its kind stores (see `Item.content`)."""
    if "options" in content:
        return ItemKind.MCQ
    if "reference" in content:
        return ItemKind.OPEN
    if "answer" in content:
        return ItemKind.LABEL
    if "target" in content:
        return ItemKind.BOX
    return ItemKind.MCQ


def normalise_text(text) -> str:
    # Browsers post CRLF line ends: the same report typed twice must compare equal.
    return str(text or "").replace("\r\n", "\n").replace("\r", "\n").strip()


def content_normalise(content: dict, kind: str | None = None) -> dict:
    """The comparable form of a content: stripped texts, unused (empty) options dropped."""
    kind = kind or guess_kind(content)
    base = {
        "question": str(content.get("question") or "").strip(),
        "hint": str(content.get("hint") or "").strip(),
    }
    if kind == ItemKind.MCQ:
        options = [str(option).strip() for option in content.get("options") or []]
        return {
            **base,
            "options": [option for option in options if option],
            "answer": str(content.get("answer") or "").strip().upper(),
        }
    if kind in (ItemKind.OPEN, ItemKind.RETRIEVAL):
        return {
            **base,
            "reference": normalise_text(content.get("reference")),
            "target": content.get("target"),
        }
    if kind == ItemKind.LABEL:
        answer = str(content.get("answer") or "").strip()
        return {**base, "answer": answer, "target": content.get("target")}
    return {**base, "target": content.get("target")}


def content_clean(raw: dict | None, *, item: Item, max_options: int) -> dict:
    """Validate a proposed content for this item (see the module docstring)."""
    if item.kind == ItemKind.MCQ:
        return _mcq_clean(raw, item=item, max_options=max_options)
    if not isinstance(raw, dict):
        raise DomainError(_("An edit needs the proposed content."))
    own = {"question": item.question, "hint": item.hint, "target": item.target}
    if item.kind == ItemKind.OPEN:
        content = content_normalise({**own, "reference": raw.get("reference")}, item.kind)
        if not content["reference"]:
            raise DomainError(_("The reference report cannot be empty."))
        return content
    if item.kind == ItemKind.LABEL:
        content = content_normalise({**own, "answer": raw.get("answer")}, item.kind)
        _check_label(item, content["answer"])
        return content
    if item.kind == ItemKind.BOX and not (item.target or {}).get("phase"):
        target = {**(item.target or {}), "box": _checked_image_box(item, raw.get("box"))}
        return content_normalise({**own, "target": target}, item.kind)
    if item.kind == ItemKind.BOX:
        target = {**(item.target or {}), **_checked_box(item, raw.get("voxel"))}
        return content_normalise({**own, "target": target}, item.kind)
    raise DomainError(
        _("A retrieval pair is confirmed (accept) or rejected when the report is not this case's.")
    )


def content_apply(item: Item, content: dict) -> None:
    """Set the item's fields from a clean content of its kind."""
    item.question = content["question"]
    item.hint = content["hint"]
    if item.kind == ItemKind.MCQ:
        item.options = list(content["options"])
        item.answer = content["answer"]
        return
    if "answer" in content:
        item.answer = content["answer"]
    if "reference" in content:
        item.reference = content["reference"]
    item.target = content.get("target")


def label_set(item: Item) -> list[str]:
    """The labels a classification item may take (its field's set on the benchmark)."""
    field = (item.target or {}).get("field", "")
    return list((item.benchmark.label_sets or {}).get(field, []))


def _check_label(item: Item, label: str) -> None:
    labels = label_set(item)
    if label not in labels:
        raise DomainError(
            _("%(label)s is not in the label set (%(labels)s).")
            % {"label": label or "—", "labels": ", ".join(labels)}
        )


def _checked_box(item: Item, voxel) -> dict:
    """The corrected box in voxels (end-exclusive) and mm, checked against its phase's volume."""
    if not isinstance(voxel, list | tuple) or len(voxel) != 6:
        raise DomainError(_("A box needs six whole numbers: x0, y0, z0, x1, y1, z1."))
    try:
        numbers = [int(value) for value in voxel]
    except (TypeError, ValueError):
        raise DomainError(_("A box needs six whole numbers: x0, y0, z0, x1, y1, z1.")) from None
    phase = (item.target or {}).get("phase")
    volume = (
        Volume.objects.filter(case_id=item.case_id, phase=phase).first()
        if item.case_id is not None
        else None
    )
    if volume is None:
        raise DomainError(_("This item's CT phase is missing: its box cannot be corrected."))
    sizes = (volume.size_x, volume.size_y, volume.size_z)
    for axis, name in enumerate(_BOX_AXES):
        low, high = numbers[axis], numbers[axis + 3]
        if not 0 <= low < high <= sizes[axis]:
            raise DomainError(
                _("The box must have 0 ≤ %(a)s0 < %(a)s1 ≤ %(n)d on this volume.")
                % {"a": name, "n": sizes[axis]}
            )
    return {"voxel": numbers, "mm": ct.box_voxel_to_mm(numbers, ct.VolumeGeometry.of(volume))}


def _checked_image_box(item: Item, box) -> list[int]:
    """A corrected box on the item's image, in pixels (x0, y0, x1, y1; x1 and y1 end-exclusive)."""
    message = _("A box on the image needs four whole numbers: x0, y0, x1, y1.")
    if not isinstance(box, list | tuple) or len(box) != 4:
        raise DomainError(message)
    try:
        x0, y0, x1, y1 = (int(value) for value in box)
    except (TypeError, ValueError):
        raise DomainError(message) from None
    link = item.item_images.select_related("image").order_by("position").first()
    width, height = (link.image.width, link.image.height) if link else (x1, y1)
    if not (0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height):
        raise DomainError(
            _("The box must have 0 ≤ x0 < x1 ≤ %(w)d and 0 ≤ y0 < y1 ≤ %(h)d on this image.")
            % {"w": width, "h": height}
        )
    return [x0, y0, x1, y1]


def _mcq_clean(raw: dict | None, *, item: Item, max_options: int) -> dict:
    if not isinstance(raw, dict):
        raise DomainError(_("An edit needs the proposed question, options and answer."))
    content = content_normalise({"hint": item.hint, **raw}, ItemKind.MCQ)
    if not content["question"]:
        raise DomainError(_("The question cannot be empty."))
    options = content["options"]
    if len(options) < 2:
        raise DomainError(_("A multiple-choice question needs at least two options."))
    if len(options) > max_options:
        raise DomainError(_("This benchmark allows at most %(n)d options.") % {"n": max_options})
    if len(set(options)) != len(options):
        raise DomainError(_("Two options have the same text."))
    # One letter: `"" in "ABC"` holds for a string, and an item without an answer is no item.
    if len(content["answer"]) != 1 or content["answer"] not in LETTERS[: len(options)]:
        raise DomainError(_("The answer must be the letter of one of the options."))
    return content
