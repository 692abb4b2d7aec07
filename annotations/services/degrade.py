"""Degraded twins: clean items copied with an image degraded by the engine, reproducibly.

A twin is identified by (clean item, kind, severity, per-twin seed); the per-twin seed is derived
from the run's seed, the clean item's index, the kind and the severity, so re-running with the same
arguments finds every twin already there and creates nothing, and any single twin can be rebuilt
from what is stored on it (`apply(clean, kind, severity, seed=degradation_seed, modality=...)`).
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Max, Q, QuerySet
from django.utils.translation import gettext as _
from PIL import Image as PILImage

from annotations.formats.taxonomy import normalise_modality
from annotations.imaging.degrade import KINDS, SEVERITIES, DegradationError, apply
from annotations.imaging.degrade import kinds_for_modality as engine_kinds_for_modality
from annotations.models import (
    TAXONOMY_FIELDS,
    Benchmark,
    Item,
    ItemImage,
    ItemRevision,
    RevisionReason,
    Severity,
)
from annotations.services.errors import DomainError
from annotations.services.images import image_bytes, image_store

# Fields a twin shares with its clean item (the question and its taxonomy).
COPIED_FIELDS = ("question", "hint", "options", "answer", *TAXONOMY_FIELDS)
# Extra columns that describe the clean item's own file and would be false on its twin.
EXTRA_NOT_COPIED = ("image_path",)
BATCH_ITEMS = 10


@dataclass(frozen=True)
class PlannedTwin:
    clean_id: int
    clean_index: int
    modality: str
    kind: str
    severity: str
    seed: int


def parse_kinds(value: str | Iterable[str]) -> list[str]:
    """`all` or a comma-separated (or listed) set of kind ids, in the engine's order."""
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [name.strip() for name in names if name and name.strip()]
    if names == ["all"]:
        return list(KINDS)
    unknown = sorted(set(names) - set(KINDS))
    if unknown:
        raise DomainError(
            _("Unknown degradation kinds: %(names)s. Known: %(known)s")
            % {"names": ", ".join(unknown), "known": ", ".join(KINDS)}
        )
    if not names:
        raise DomainError(_("Choose at least one degradation kind."))
    return [kind for kind in KINDS if kind in names]


def parse_severities(value: str | Iterable[str]) -> list[str]:
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [name.strip() for name in names if name and name.strip()]
    unknown = sorted(set(names) - set(SEVERITIES))
    if unknown or not names:
        raise DomainError(
            _("Severities must be among: %(known)s") % {"known": ", ".join(SEVERITIES)}
        )
    return [severity for severity in SEVERITIES if severity in names]


def twin_seed(seed: int, clean_index: int, kind: str, severity: str) -> int:
    """The seed of one twin; 48 bits so that it survives JSON readers that use doubles."""
    digest = hashlib.sha256(f"{seed}:{clean_index}:{kind}:{severity}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def kinds_for_modality(modality: str) -> list[str]:
    """The kinds that fit an item's modality; none for an unknown or missing modality."""
    canonical = normalise_modality(modality or "")
    if canonical is None:
        return []
    try:
        return engine_kinds_for_modality(canonical)
    except DegradationError:
        return []


def clean_items(benchmark: Benchmark) -> QuerySet[Item]:
    """Items that can get twins: marked clean, or unmarked and not themselves a twin."""
    unmarked = Q(degradation_severity=Severity.NONE, clean_twin__isnull=True)
    return (
        Item.objects.filter(benchmark=benchmark)
        .filter(Q(degradation_severity=Severity.CLEAN) | unmarked)
        .exclude(modality="")
        .order_by("source_index")
    )


def degrade_plan(
    *, benchmark: Benchmark, kinds: list[str], severities: list[str], seed: int
) -> list[PlannedTwin]:
    """The twins a run with these arguments would create (those not there yet), in order."""
    existing = set(
        Item.objects.filter(benchmark=benchmark, clean_twin__isnull=False).values_list(
            "clean_twin_id", "degradation_type", "degradation_severity", "degradation_seed"
        )
    )
    plan = []
    rows = clean_items(benchmark).values_list("id", "source_index", "modality")
    for clean_id, clean_index, modality in rows:
        fitting = kinds_for_modality(modality)
        for kind in kinds:
            if kind not in fitting:
                continue
            for severity in severities:
                twin = twin_seed(seed, clean_index, kind, severity)
                if (clean_id, kind, severity, twin) in existing:
                    continue
                plan.append(
                    PlannedTwin(
                        clean_id, clean_index, normalise_modality(modality), kind, severity, twin
                    )
                )
    return plan


def benchmark_degrade(
    *,
    benchmark: Benchmark,
    kinds: list[str] | str,
    severities: list[str] | str,
    seed: int,
    user=None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Create the missing degraded twins of every clean item; return how many were created.

    Each batch of clean items is one transaction, so a killed run keeps finished batches and
    a re-run completes the rest. `progress(n)` is called after every twin.
    """
    kinds, severities = parse_kinds(kinds), parse_severities(severities)
    if seed < 0:
        raise DomainError(_("The seed must be zero or positive."))
    plan = degrade_plan(benchmark=benchmark, kinds=kinds, severities=severities, seed=seed)
    by_clean: dict[int, list[PlannedTwin]] = {}
    for twin in plan:
        by_clean.setdefault(twin.clean_id, []).append(twin)
    clean_ids = list(by_clean)
    created = 0
    for start in range(0, len(clean_ids), BATCH_ITEMS):
        batch = {pk: by_clean[pk] for pk in clean_ids[start : start + BATCH_ITEMS]}
        created += _degrade_batch(benchmark, batch, base_seed=seed, user=user, progress=progress)
    return created


@transaction.atomic
def _degrade_batch(
    benchmark: Benchmark, batch: dict[int, list[PlannedTwin]], *, base_seed: int, user, progress
) -> int:
    cleans = Item.objects.filter(pk__in=list(batch)).prefetch_related("item_images__image")
    next_index = (
        Item.objects.filter(benchmark=benchmark).aggregate(top=Max("source_index"))["top"] or 0
    ) + 1
    created = 0
    for clean in sorted(cleans, key=lambda item: item.source_index):
        links = list(clean.item_images.all())
        if not links:
            continue
        pixels = decode_pixels(image_bytes(links[0].image))
        for planned in batch[clean.pk]:
            # Checked again inside the transaction: another run may have made it meanwhile.
            if _twin_exists(clean, planned):
                continue
            _make_twin(clean, planned, pixels, next_index, base_seed=base_seed, user=user)
            next_index += 1
            created += 1
            if progress:
                progress(1)
    Item.objects.filter(pk__in=list(batch), degradation_severity=Severity.NONE).update(
        degradation_severity=Severity.CLEAN
    )
    return created


def _twin_exists(clean: Item, planned: PlannedTwin) -> bool:
    return Item.objects.filter(
        clean_twin=clean,
        degradation_type=planned.kind,
        degradation_severity=planned.severity,
        degradation_seed=planned.seed,
    ).exists()


def _make_twin(
    clean: Item, planned: PlannedTwin, pixels: np.ndarray, index: int, *, base_seed: int, user
) -> Item:
    try:
        degraded, params = apply(
            pixels, planned.kind, planned.severity, seed=planned.seed, modality=planned.modality
        )
    except DegradationError as error:
        raise DomainError(
            _("Item #%(index)s: %(error)s") % {"index": clean.source_index, "error": error}
        ) from error
    params["base_seed"] = base_seed
    stored, _created = image_store(data=encode_png(degraded))
    twin = Item.objects.create(
        benchmark=clean.benchmark,
        case=clean.case,
        source_index=index,
        extra={k: v for k, v in clean.extra.items() if k not in EXTRA_NOT_COPIED},
        clean_twin=clean,
        degradation_type=planned.kind,
        degradation_severity=planned.severity,
        degradation_params=params,
        degradation_seed=planned.seed,
        **{field: getattr(clean, field) for field in COPIED_FIELDS},
    )
    ItemImage.objects.create(item=twin, image=stored, position=0)
    ItemRevision.objects.create(
        item=twin,
        version=1,
        content=twin.content(),
        reason=RevisionReason.DEGRADED,
        note=f"{planned.kind} {planned.severity} of #{clean.source_index}",
        author=user,
    )
    return twin


def decode_pixels(data: bytes) -> np.ndarray:
    """Pixels as the engine wants them: 16-bit grey stays uint16, colour becomes RGB uint8."""
    with PILImage.open(io.BytesIO(data)) as image:
        image.load()
        if image.mode.startswith("I;16"):
            return np.asarray(image, dtype=np.uint16)
        if image.mode == "I":
            values = np.asarray(image)
            if values.min() >= 0 and values.max() <= 65535:
                return values.astype(np.uint16)
            raise DomainError(_("32-bit integer images are not supported."))
        if image.mode in ("L", "1", "LA"):
            return np.asarray(image.convert("L"))
        return np.asarray(image.convert("RGB"))


def encode_png(pixels: np.ndarray) -> bytes:
    """Lossless PNG (16-bit grey kept 16-bit): a degraded image must not get JPEG artefacts too."""
    buffer = io.BytesIO()
    PILImage.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()
