"""Degraded twins: clean items copied with an image degraded by the engine, reproducibly.

A twin is identified by (clean item, kind, severity, per-twin seed); the per-twin seed is derived
from the run's seed, the clean item's index, the kind and the severity, so re-running with the same
arguments finds every twin already there and creates nothing, and any single twin can be rebuilt
from what is stored on it (`apply(clean, kind, severity, seed=degradation_seed, modality=...)`).

A background degradation job is planned once (`DEGRADE_WORK`): the missing twins, each with the
index it will get, stored as chunks of about JOB_DEGRADE_CHUNK twins that any worker may take. A
chunk cut short by a dead worker is taken again and makes only the twins still missing; the
database refuses a second copy of a twin, so two racing jobs cannot both make it.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.translation import gettext as _
from PIL import Image as PILImage

from annotations.formats.taxonomy import normalise_modality
from annotations.imaging.degrade import KINDS, SEVERITIES, DegradationError, apply
from annotations.imaging.degrade import kinds_for_modality as engine_kinds_for_modality
from annotations.models import (
    TAXONOMY_FIELDS,
    Benchmark,
    Image,
    Item,
    ItemImage,
    ItemRevision,
    Job,
    JobChunk,
    RevisionReason,
    Severity,
)
from annotations.models.imaging import image_upload_path
from annotations.selectors.pairs import clean_items
from annotations.services.errors import DomainError
from annotations.services.images import image_bytes
from annotations.services.jobs import (
    OPEN,
    Check,
    ChunkedWork,
    PlannedChunk,
    Progress,
    job_create,
    job_send,
)

# Fields a twin shares with its clean item (the question and its taxonomy).
COPIED_FIELDS = ("question", "hint", "options", "answer", *TAXONOMY_FIELDS)
# Extra columns that describe the clean item's own file and would be false on its twin.
EXTRA_NOT_COPIED = ("image_path",)


@dataclass(frozen=True)
class PlannedTwin:
    clean_id: int
    clean_index: int
    modality: str
    kind: str
    severity: str
    seed: int
    index: int  # the twin's source index, given when it is planned


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


def degrade_plan(
    *, benchmark: Benchmark, kinds: list[str], severities: list[str], seed: int
) -> list[PlannedTwin]:
    """The twins a run with these arguments would create (those not there yet), in order, each
    with the next free source index."""
    existing = set(
        Item.objects.filter(benchmark=benchmark, clean_twin__isnull=False).values_list(
            "clean_twin_id", "degradation_type", "degradation_severity", "degradation_seed"
        )
    )
    plan = []
    index = _first_free_index(benchmark)
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
                canonical = normalise_modality(modality) or modality
                plan.append(
                    PlannedTwin(clean_id, clean_index, canonical, kind, severity, twin, index)
                )
                index += 1
    return plan


def _first_free_index(benchmark: Benchmark) -> int:
    """After the benchmark's highest index and every index a planned, unfinished chunk holds."""
    top = Item.objects.filter(benchmark=benchmark).aggregate(top=Max("source_index"))["top"]
    reserved = JobChunk.objects.filter(
        job__benchmark=benchmark, job__kind="degrade", status__in=OPEN
    ).values_list("params__last_index", flat=True)
    return max([top if top is not None else -1, *(int(i) for i in reserved if i is not None)]) + 1


def benchmark_degrade(
    *,
    benchmark: Benchmark,
    kinds: list[str] | str,
    severities: list[str] | str,
    seed: int,
    user=None,
    progress: Progress | None = None,
) -> int:
    """Create the missing degraded twins of every clean item, in this process; return how many
    were created. `progress(n)` is called as each clean item's twins are committed."""
    kinds, severities = parse_kinds(kinds), parse_severities(severities)
    if seed < 0:
        raise DomainError(_("The seed must be zero or positive."))
    plan = degrade_plan(benchmark=benchmark, kinds=kinds, severities=severities, seed=seed)
    return degrade_twins(planned=plan, base_seed=seed, user=user, progress=progress)


def degrade_job_start(*, benchmark: Benchmark, params: dict, user) -> Job:
    """Queue a degradation job for the benchmark; its task is sent after the commit."""
    job = job_create(kind="degrade", params=params, user=user, benchmark=benchmark)
    transaction.on_commit(lambda: job_send(job_id=job.pk, kind="degrade"))
    return job


def degrade_twins(
    *,
    planned: list[PlannedTwin],
    base_seed: int,
    user=None,
    progress: Progress | None = None,
    check: Check | None = None,
) -> int:
    """Make the planned twins not made yet, one transaction per clean item (a killed worker
    keeps what it committed); returns how many were made. `progress(n)` follows each commit,
    counting twins found made too; `check()` runs before each clean item and may raise to stop."""
    by_clean: dict[int, list[PlannedTwin]] = {}
    for twin in planned:
        by_clean.setdefault(twin.clean_id, []).append(twin)
    created = 0
    for clean_id, twins in by_clean.items():
        if check:
            check()
        created += _degrade_clean(clean_id, twins, base_seed=base_seed, user=user)
        if progress:
            progress(len(twins))
    return created


@transaction.atomic
def _degrade_clean(clean_id: int, twins: list[PlannedTwin], *, base_seed: int, user) -> int:
    clean = Item.objects.filter(pk=clean_id).prefetch_related("item_images__image").first()
    links = list(clean.item_images.all()) if clean is not None else []
    if clean is None or not links:
        return 0
    made = set(
        clean.degraded_twins.values_list(
            "degradation_type", "degradation_severity", "degradation_seed"
        )
    )
    missing = [t for t in twins if (t.kind, t.severity, t.seed) not in made]
    if missing:
        created = _make_twins(clean, missing, links[0].image, base_seed=base_seed, user=user)
    else:
        created = 0
    if clean.degradation_severity == Severity.NONE:
        Item.objects.filter(pk=clean.pk).update(degradation_severity=Severity.CLEAN)
    return created


def _make_twins(
    clean: Item, missing: list[PlannedTwin], image: Image, *, base_seed: int, user
) -> int:
    pixels = decode_pixels(image_bytes(image))
    created = 0
    for planned in missing:
        try:
            with transaction.atomic():
                _make_twin(clean, planned, pixels, base_seed=base_seed, user=user)
        except IntegrityError:
            if _twin_exists(clean, planned):  # another job made it meanwhile
                continue
            raise
        created += 1
    return created


def _twin_exists(clean: Item, planned: PlannedTwin) -> bool:
    return Item.objects.filter(
        clean_twin=clean,
        degradation_type=planned.kind,
        degradation_severity=planned.severity,
        degradation_seed=planned.seed,
    ).exists()


def _make_twin(
    clean: Item, planned: PlannedTwin, pixels: np.ndarray, *, base_seed: int, user
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
    stored = _twin_image_store(encode_png(degraded), degraded)
    twin = Item.objects.create(
        benchmark_id=clean.benchmark_id,
        case_id=clean.case_id,
        source_index=planned.index,
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


def _twin_image_store(data: bytes, pixels: np.ndarray) -> Image:
    """The Image for a twin's PNG bytes, its file written whole before its row exists."""
    digest = hashlib.sha256(data).hexdigest()
    existing = Image.objects.filter(sha256=digest).first()
    if existing is not None:
        return existing
    image = Image(
        sha256=digest,
        format="PNG",
        width=pixels.shape[1],
        height=pixels.shape[0],
        size_bytes=len(data),
    )
    image.file.name = image_upload_path(image, "")
    _write_whole(image.file.name, data)
    image.save()
    return image


def _write_whole(name: str, data: bytes) -> None:
    """Write a file that is never seen half written under its name.

    A worker killed mid-write leaves a temporary file beside it, which the next attempt at the
    same twin (same seed, same bytes, same name) removes; a file written whose row was rolled
    back is written again and adopted by that attempt.
    """
    try:
        path = Path(default_storage.path(name))
    except NotImplementedError:  # remote storage: one request writes a whole object
        if not default_storage.exists(name):
            default_storage.save(name, ContentFile(data))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    for leftover in path.parent.glob(f".{path.name}.*.part"):
        leftover.unlink(missing_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


# --- the background job -------------------------------------------------------------------


def degrade_job_plan(job: Job) -> list[PlannedChunk]:
    """The job's missing twins in chunks of whole clean items, about JOB_DEGRADE_CHUNK each."""
    params = job.params
    kinds, severities = parse_kinds(params["kinds"]), parse_severities(params["severities"])
    # Planning jobs of one benchmark one at a time: each takes indexes no other plan holds.
    Benchmark.objects.select_for_update().filter(pk=_benchmark_id(job)).first()
    plan = degrade_plan(
        benchmark=_job_benchmark(job), kinds=kinds, severities=severities, seed=params["seed"]
    )
    size = max(1, int(getattr(settings, "JOB_DEGRADE_CHUNK", 200)))
    chunks: list[PlannedChunk] = []
    current: list[PlannedTwin] = []
    for position, twin in enumerate(plan):
        current.append(twin)
        last_of_clean = position + 1 == len(plan) or plan[position + 1].clean_id != twin.clean_id
        if last_of_clean and len(current) >= size or position + 1 == len(plan):
            chunks.append(_planned_chunk(current))
            current = []
    return chunks


def _planned_chunk(twins: list[PlannedTwin]) -> PlannedChunk:
    rows = [list(astuple(twin)) for twin in twins]
    return PlannedChunk({"twins": rows, "last_index": twins[-1].index}, total=len(twins))


def degrade_job_work(job: Job, chunk: JobChunk, progress: Progress, check: Check) -> dict:
    planned = [PlannedTwin(*row) for row in chunk.params["twins"]]
    # None of the planned twins existed when the job was planned: those found made when the
    # chunk is taken again after its worker died were made by that worker, for this job.
    earlier = _planned_made(planned) if chunk.attempts > 1 else 0
    created = degrade_twins(
        planned=planned,
        base_seed=job.params["seed"],
        user=job.created_by,
        progress=progress,
        check=check,
    )
    return {"created": earlier + created}


def _planned_made(planned: list[PlannedTwin]) -> int:
    made = set(
        Item.objects.filter(clean_twin_id__in={t.clean_id for t in planned}).values_list(
            "clean_twin_id", "degradation_type", "degradation_severity", "degradation_seed"
        )
    )
    return sum((t.clean_id, t.kind, t.severity, t.seed) in made for t in planned)


def degrade_job_finish(job: Job, chunks: list[JobChunk]) -> dict:
    created = sum(chunk.result.get("created", 0) for chunk in chunks)
    return {"benchmark": _job_benchmark(job).name, "created": created}


def _benchmark_id(job: Job) -> int:
    if job.benchmark_id is None:  # degrade_job_start always gives one
        raise DomainError(_("This degradation job has no benchmark."))
    return job.benchmark_id


def _job_benchmark(job: Job) -> Benchmark:
    if job.benchmark is None:
        raise DomainError(_("This degradation job has no benchmark."))
    return job.benchmark


DEGRADE_WORK = ChunkedWork(
    kind="degrade", plan=degrade_job_plan, work=degrade_job_work, finish=degrade_job_finish
)


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
