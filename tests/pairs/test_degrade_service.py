from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from annotations.imaging.degrade import apply, kinds_for_modality
from annotations.models import Item, ItemRevision, RevisionReason
from annotations.services.degrade import (
    benchmark_degrade,
    decode_pixels,
    encode_png,
    twin_seed,
)
from annotations.services.errors import DomainError
from annotations.services.images import image_bytes
from tests.factories import make_item
from tests.pairs.helpers import make_pair_benchmark, modality_png, twins_of

pytestmark = pytest.mark.django_db


def run(name: str, *args: str) -> str:
    out = io.StringIO()
    call_command("degrade", name, *args, stdout=out, verbosity=0)
    return out.getvalue()


def test_the_command_creates_a_twin_per_fitting_kind_and_severity():
    benchmark = make_pair_benchmark()
    output = run("medq", "--kinds", "all", "--severities", "mild,severe", "--seed", "7")
    ct, derm = benchmark.items.filter(clean_twin__isnull=True).order_by("source_index")
    expected = 2 * (len(kinds_for_modality("CT")) + len(kinds_for_modality("Dermoscopy")))
    assert output.strip() == f"created {expected} degraded items"
    assert twins_of(ct).count() == 2 * len(kinds_for_modality("CT"))
    assert set(twins_of(derm).values_list("degradation_type", flat=True)) == set(
        kinds_for_modality("Dermoscopy")
    )
    assert not twins_of(derm).filter(degradation_type="low_dose").exists()


def test_a_re_run_with_the_same_arguments_creates_nothing():
    make_pair_benchmark()
    run("medq", "--kinds", "gaussian_blur,low_dose", "--seed", "3")
    count = Item.objects.count()
    assert run("medq", "--kinds", "gaussian_blur,low_dose", "--seed", "3").strip() == (
        "created 0 degraded items"
    )
    assert Item.objects.count() == count


def test_another_seed_makes_new_twins():
    make_pair_benchmark()
    first = run("medq", "--kinds", "gaussian_noise", "--severities", "mild", "--seed", "1")
    second = run("medq", "--kinds", "gaussian_noise", "--severities", "mild", "--seed", "2")
    assert first.strip() == second.strip() == "created 2 degraded items"


def test_it_refuses_unknown_kinds_and_severities():
    make_pair_benchmark()
    with pytest.raises(CommandError, match="Unknown degradation kinds: sepia"):
        run("medq", "--kinds", "gaussian_blur,sepia")
    with pytest.raises(CommandError, match="Severities"):
        run("medq", "--kinds", "gaussian_blur", "--severities", "extreme")
    with pytest.raises(CommandError, match="No benchmark"):
        run("nope")
    assert not Item.objects.filter(clean_twin__isnull=False).exists()


def test_the_twin_copies_the_question_and_stores_kind_params_and_seed():
    benchmark = make_pair_benchmark()
    run("medq", "--kinds", "low_dose", "--severities", "severe", "--seed", "5")
    clean = benchmark.items.get(source_index=0)
    twin = twins_of(clean).get()
    assert twin.source_index == 2  # after the highest index of the benchmark
    assert (twin.question, twin.options, twin.answer) == (clean.question, clean.options, "A")
    assert (twin.modality, twin.source, twin.status) == ("CT", "TCIA", "pending")
    assert twin.extra == {"note": "kept"}  # the clean file's image_path is not the twin's
    assert (twin.degradation_type, twin.degradation_severity) == ("low_dose", "severe")
    assert twin.degradation_seed == twin_seed(5, 0, "low_dose", "severe")
    assert twin.degradation_params["seed"] == twin.degradation_seed
    assert twin.degradation_params["base_seed"] == 5
    revision = ItemRevision.objects.get(item=twin)
    assert (revision.version, revision.reason) == (1, RevisionReason.DEGRADED)


def test_the_stored_image_is_the_engine_output_and_reproducible():
    benchmark = make_pair_benchmark(modalities=("MRI",))
    benchmark_degrade(benchmark=benchmark, kinds=["ghosting_artifact"], severities=["mild"], seed=9)
    twin = Item.objects.get(degradation_type="ghosting_artifact")
    stored = image_bytes(twin.item_images.get().image)
    clean = decode_pixels(modality_png("MRI", seed=0))
    assert clean.dtype == np.uint16  # 16-bit MR stays 16-bit
    expected, _params = apply(
        clean, "ghosting_artifact", "mild", seed=twin.degradation_seed, modality="MRI"
    )
    assert stored == encode_png(expected)
    with PILImage.open(io.BytesIO(stored)) as image:
        assert (image.format, image.mode) == ("PNG", "I;16")
        assert not np.array_equal(np.asarray(image), clean)


def test_rgb_stays_rgb():
    benchmark = make_pair_benchmark(modalities=("Dermoscopy",))
    benchmark_degrade(benchmark=benchmark, kinds="gaussian_blur", severities="severe", seed=0)
    twin = Item.objects.get(degradation_type="gaussian_blur")
    with PILImage.open(io.BytesIO(image_bytes(twin.item_images.get().image))) as image:
        assert image.mode == "RGB"


def test_items_without_modality_twins_and_unmarked_items():
    benchmark = make_pair_benchmark(modalities=("CT",))
    make_item(benchmark, index=50, image=modality_png("X-ray"), modality="X-ray")  # unmarked clean
    make_item(benchmark, index=51)  # no modality: left alone
    created = benchmark_degrade(
        benchmark=benchmark, kinds="rotation_artifact", severities="mild", seed=0
    )
    assert created == 2
    assert benchmark.items.get(source_index=50).degradation_severity == "clean"
    assert benchmark.items.get(source_index=51).degradation_severity == ""
    # twins are never degraded again
    assert (
        benchmark_degrade(benchmark=benchmark, kinds="rotation_artifact", severities="mild", seed=0)
        == 0
    )


def test_the_service_reports_progress_once_each_clean_items_twins_are_stored():
    benchmark = make_pair_benchmark()
    ticks = []
    created = benchmark_degrade(
        benchmark=benchmark,
        kinds="gaussian_noise",
        severities="mild,severe",
        seed=0,
        progress=lambda n: ticks.append((n, Item.objects.filter(clean_twin__isnull=False).count())),
    )
    assert created == 4 and ticks == [(2, 2), (2, 4)]


def test_a_negative_seed_is_refused():
    benchmark = make_pair_benchmark()
    with pytest.raises(DomainError):
        benchmark_degrade(benchmark=benchmark, kinds="all", severities="mild", seed=-1)


def test_the_contact_sheet_command_writes_a_png(tmp_path):
    out = io.StringIO()
    path = tmp_path / "sheet" / "contact.png"
    call_command("contact_sheet", str(path), "--size", "32", stdout=out)
    assert out.getvalue().strip() == f"wrote {path}"
    with PILImage.open(path) as image:
        assert image.format == "PNG"
        assert image.width > 32 * 3 and image.height > 32 * 18
    with pytest.raises(CommandError):
        call_command("contact_sheet", str(path), "--size", "4")
