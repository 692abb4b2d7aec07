"""Writing boxes: 3D boxes on CT volumes, 2D boxes on images, every change a BoxRevision.

Writes that change an existing box carry the version they were based on; a stale version gets
``ConflictError`` (never a silent overwrite), exactly like item edits.

Boxes follow the review rules. A reviewer draws and changes boxes only on a case or image of an
item they are reviewing, and only their own proposals (state `proposed`). Accepting or rejecting
a box settles it: an adjudicator does it while settling the dispute of the box's own item (its
localization item: never through another item of the case, never one they reviewed, never in a
case where they still have an open review, never their own box), a curator as a correction.
Every change is a BoxRevision naming who and why, so a rejected box (which releases leave out)
always carries a reviewed decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import F, Q
from django.utils.translation import gettext

from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, has_role
from annotations.imaging import ct
from annotations.models import (
    Assignment,
    Box,
    BoxLabel,
    BoxRevision,
    BoxState,
    Image,
    Item,
    ItemKind,
    ItemStatus,
    Volume,
)
from annotations.selectors import visibility
from annotations.services.errors import ConflictError, DomainError, NotAllowedError

CT_LABELS = ("tumor", "lymph_node", "stomach")


def volume_geometry(volume: Volume) -> ct.VolumeGeometry:
    return ct.VolumeGeometry.of(volume)


def _checked_label(label: str, allowed: Sequence[str]) -> str:
    if label not in allowed:
        raise DomainError(
            gettext("Unknown label '%(label)s'; expected one of %(allowed)s.")
            % {"label": label, "allowed": ", ".join(allowed)}
        )
    return label


def _checked_voxel(voxel: Sequence[int], volume: Volume) -> tuple[int, ...]:
    try:
        return ct.validate_voxel_box(voxel, volume.shape)
    except ct.BoxError as error:
        raise DomainError(str(error), code="box_outside") from None


def _checked_pixels(coords: Sequence[int], image: Image) -> tuple[int, int, int, int]:
    if len(coords) != 4 or not all(isinstance(v, int) and not isinstance(v, bool) for v in coords):
        raise DomainError(gettext("A 2D box needs 4 integers [x0, y0, x1, y1]."))
    x0, y0, x1, y1 = coords
    if not (0 <= x0 < x1 <= image.width and 0 <= y0 < y1 <= image.height):
        raise DomainError(
            gettext("Box %(box)s does not fit the %(width)s×%(height)s image.")
            % {"box": list(coords), "width": image.width, "height": image.height},
            code="box_outside",
        )
    return (x0, y0, x1, y1)


def _record(box: Box, reason: str, user, note: str = "") -> None:
    BoxRevision.objects.create(
        box=box,
        version=box.version,
        coords=box.voxel,
        mm=box.mm,
        label=box.label,
        state=box.state,
        reason=reason,
        note=note,
        author=user,
    )


# --- who may do what ------------------------------------------------------------------------


def _items_of(*, volume: Volume | None = None, image: Image | None = None):
    """The items a box on this volume (its case) or image belongs to."""
    if volume is not None:
        return Item.objects.filter(case_id=volume.case_id)
    if image is None:
        return Item.objects.none()
    return Item.objects.filter(Q(item_images__image=image) | Q(case__endoscopy_image=image))


def _reviews_here(user, *, volume: Volume | None = None, image: Image | None = None) -> bool:
    """Whether `user` is reviewing an item of this case or image (an assignment, item in review)."""
    return Assignment.objects.filter(
        reviewer=user,
        item__in=_items_of(volume=volume, image=image),
        item__status=ItemStatus.IN_REVIEW,
    ).exists()


def _corrects(user, box: Box) -> bool:
    # A curator corrects boxes, except on a case they are reviewing: there they are a reviewer.
    return has_role(user, CURATOR) and not _reviews_here(user, volume=box.volume, image=box.image)


def box_may_correct(user, *, volume: Volume | None = None, image: Image | None = None) -> bool:
    """Whether `user` changes any box here as a curator's correction."""
    return _corrects(user, Box(volume=volume, image=image))


def box_may_draw(user, *, volume: Volume | None = None, image: Image | None = None) -> bool:
    """Curators always; a reviewer on a case or image of an item they are reviewing."""
    if has_role(user, CURATOR):
        return True
    return has_role(user, REVIEWER) and _reviews_here(user, volume=volume, image=image)


def _own_items(box: Box):
    """The items through which `box` is judged: the item it belongs to; for a 3D box the
    localization items of its case and phase (an imported box, only the item it is the target
    of); for a 2D box the localization items of its image."""
    if box.item_id:
        return Item.objects.filter(pk=box.item_id)
    localization = Item.objects.filter(kind=ItemKind.BOX)
    if box.volume is not None:
        here = localization.filter(case_id=box.volume.case_id, target__phase=box.volume.phase)
        if box.pk and box.source == "imported":
            here = here.filter(target__box=box.pk)
        return here
    if box.image is None:
        return Item.objects.none()
    return localization.filter(
        Q(item_images__image=box.image) | Q(case__endoscopy_image=box.image)
    ).distinct()


def _settling(user, box: Box) -> Item | None:
    """The dispute through which this adjudicator judges the box, or None: a disputed item of
    the box itself (never through another item of its case), which they did not review, in a
    case where they have no open review, and never a box they drew themselves."""
    if not has_role(user, ADJUDICATOR):
        return None
    if box.pk and box.source != "imported" and box.author_id == user.pk:
        return None
    return (
        _own_items(box)
        .filter(status=ItemStatus.DISPUTED)
        .exclude(visibility.items_not_settled_by(user))
        .order_by("pk")
        .first()
    )


def box_may_judge(user, *, volume: Volume | None = None, image: Image | None = None) -> bool:
    """Whether `user` may accept or reject boxes here (the viewer shows the buttons)."""
    box = Box(volume=volume, image=image)
    return _corrects(user, box) or _settling(user, box) is not None


def _check_draw(user, *, volume: Volume | None = None, image: Image | None = None) -> None:
    if not box_may_draw(user, volume=volume, image=image):
        raise NotAllowedError(
            gettext("You can draw boxes only on the cases and images you are reviewing."),
            code="not_assigned",
        )


def _check_change(user, box: Box) -> str:
    """Why `user` may change this box (the revision's reason), or NotAllowedError."""
    if _corrects(user, box):
        return "corrected"
    _check_draw(user, volume=box.volume, image=box.image)
    # An imported box is nobody's proposal, whoever ran the import.
    mine = box.author_id == user.pk and box.source != "imported"
    if not mine or box.state != BoxState.PROPOSED:
        raise NotAllowedError(
            gettext(
                "This box is not your proposal: draw your own box; an adjudicator or a curator "
                "settles the others."
            ),
            code="not_your_box",
        )
    return "edited"


@transaction.atomic
def box_create_3d(
    *, volume: Volume, label: str, voxel: Sequence[int], user, source: str = "drawn"
) -> Box:
    """A new 3D box on ``volume`` (end-exclusive voxel ranges), with its LPS millimetre corners."""
    _check_draw(user, volume=volume)
    _checked_label(label, CT_LABELS)
    x0, y0, z0, x1, y1, z1 = _checked_voxel(voxel, volume)
    box = Box.objects.create(
        volume=volume,
        label=label,
        x0=x0,
        y0=y0,
        z0=z0,
        x1=x1,
        y1=y1,
        z1=z1,
        mm=ct.box_voxel_to_mm((x0, y0, z0, x1, y1, z1), volume_geometry(volume)),
        source=source,
        author=user,
    )
    _record(box, source, user)
    return box


@transaction.atomic
def box_create_2d(*, image: Image, label: str, coords: Sequence[int], user) -> Box:
    """A new 2D box on an image, in pixels ``[x0, y0, x1, y1]`` (end-exclusive)."""
    _check_draw(user, image=image)
    _checked_label(label, BoxLabel.values)
    x0, y0, x1, y1 = _checked_pixels(coords, image)
    box = Box.objects.create(image=image, label=label, x0=x0, y0=y0, x1=x1, y1=y1, author=user)
    _record(box, "drawn", user)
    return box


def _claim(box: Box, version: int, **changes) -> Box:
    """Apply ``changes`` only if the box is still at ``version``; the loser of a race conflicts."""
    updated = Box.objects.filter(pk=box.pk, version=version).update(
        version=F("version") + 1, **changes
    )
    if not updated:
        current = Box.objects.filter(pk=box.pk).values_list("version", flat=True).first()
        raise ConflictError(
            gettext("This box was changed by someone else; reload it."), current_version=current
        )
    box.refresh_from_db()
    return box


@transaction.atomic
def box_update(
    *,
    box: Box,
    version: int,
    user,
    label: str | None = None,
    voxel: Sequence[int] | None = None,
    note: str = "",
) -> Box:
    """Move/resize a box or change its label; the new version is recorded as a revision.

    A reviewer changes only their own proposals; a curator's change is a correction."""
    reason = _check_change(user, box)
    changes: dict = {}
    if label is not None:
        changes["label"] = _checked_label(label, CT_LABELS if box.is_3d else BoxLabel.values)
    if voxel is not None:
        if box.volume is not None:
            x0, y0, z0, x1, y1, z1 = _checked_voxel(voxel, box.volume)
            changes.update(x0=x0, y0=y0, z0=z0, x1=x1, y1=y1, z1=z1)
            changes["mm"] = ct.box_voxel_to_mm(
                (x0, y0, z0, x1, y1, z1), volume_geometry(box.volume)
            )
        else:
            assert box.image is not None  # box_on_image_or_volume: a 2D box is on an image
            x0, y0, x1, y1 = _checked_pixels(voxel, box.image)
            changes.update(x0=x0, y0=y0, x1=x1, y1=y1)
    if not changes:
        raise DomainError(gettext("Nothing to change."))
    box = _claim(box, version, **changes)
    _record(box, reason, user, note=(note or "").strip())
    return box


@transaction.atomic
def box_review(*, box: Box, version: int, state: str, user, note: str = "") -> Box:
    """Accept or reject a box: an adjudicator settling a dispute of its case or image, or a
    curator's correction; the revision says which (and the note why)."""
    if state not in (BoxState.ACCEPTED, BoxState.REJECTED):
        raise DomainError(
            gettext("A box can be accepted or rejected, not '%(state)s'.") % {"state": state}
        )
    note = (note or "").strip()
    if box.state == BoxState.WITHDRAWN:
        raise DomainError(gettext("This box was withdrawn by its author."), code="withdrawn")
    if _corrects(user, box):
        why = gettext("Curator's correction")
    else:
        disputed = _settling(user, box)
        if disputed is None:
            raise NotAllowedError(
                gettext(
                    "Accepting or rejecting a box is part of adjudication of its own item: an "
                    "adjudicator settling its dispute (not one they reviewed, not in a case they "
                    "are reviewing, not a box they drew) or a curator."
                ),
                code="not_allowed",
            )
        why = gettext("Adjudication of item #%(index)s") % {"index": disputed.source_index}
    box = _claim(box, version, state=state)
    _record(box, str(state), user, note=f"{why}: {note}" if note else why)
    return box


@transaction.atomic
def box_copy_to_phase(*, box: Box, volume: Volume, user) -> Box:
    """Copy a 3D box to another phase of the same case through patient (LPS) coordinates.

    The phases of one case are registered in patient space, not in index space: their origins,
    spacings and even slice directions may differ, so the millimetre corners are carried over.
    """
    if box.volume is None:
        raise DomainError(gettext("Only 3D boxes can be copied to another phase."))
    if volume.case_id != box.volume.case_id or volume.pk == box.volume_id:
        raise DomainError(gettext("A box can only be copied to another phase of the same case."))
    _check_draw(user, volume=volume)
    mm = ct.box_voxel_to_mm(box.voxel, volume_geometry(box.volume))
    try:
        voxel = ct.box_mm_to_voxel(mm, volume_geometry(volume), volume.shape)
    except ct.BoxError as error:
        raise DomainError(str(error), code="box_outside") from None
    return box_create_3d(volume=volume, label=box.label, voxel=voxel, user=user, source="copied")


def _check_own_proposal(user, box: Box, state: str) -> None:
    _check_draw(user, volume=box.volume, image=box.image)
    # An imported box is nobody's proposal, whoever ran the import.
    if box.author_id != user.pk or box.source == "imported" or box.state != state:
        raise NotAllowedError(
            gettext(
                "Only your own proposal can be withdrawn (or brought back); an adjudicator or a "
                "curator accepts or rejects the others."
            ),
            code="not_your_box",
        )


@transaction.atomic
def box_withdraw(*, box: Box, version: int, user, note: str = "") -> Box:
    """Withdraw one's own proposal (the box tool's "delete"): the box stays, withdrawn, with a
    revision, so that history and an undo keep it; releases leave it out."""
    own = box.author_id == user.pk and box.source != "imported"
    if own and box.state == BoxState.WITHDRAWN:
        # Mine, withdrawn meanwhile (another tab, an earlier request): a conflict, not a refusal.
        raise ConflictError(
            gettext("This box is already withdrawn; reload it."), current_version=box.version
        )
    _check_own_proposal(user, box, BoxState.PROPOSED)
    box = _claim(box, version, state=BoxState.WITHDRAWN)
    _record(box, "withdrawn", user, note=(note or "").strip())
    return box


@transaction.atomic
def box_restore(*, box: Box, version: int, user) -> Box:
    """Bring one's own withdrawn proposal back (an undone delete)."""
    _check_own_proposal(user, box, BoxState.WITHDRAWN)
    box = _claim(box, version, state=BoxState.PROPOSED)
    _record(box, "restored", user)
    return box
