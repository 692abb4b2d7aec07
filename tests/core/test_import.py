from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command

from annotations.models import Benchmark, Image, Item, ItemImage, ItemRevision
from annotations.services.imports import ImportFailed, benchmark_import
from tests.formats.builders import (
    MCQ_HEADER,
    b64,
    jpeg_bytes,
    mcq_row,
    png_claiming_size,
    write_tsv,
)

pytestmark = pytest.mark.django_db

ENDO_HEADER = [
    "index",
    "image",
    "image_path",
    "question",
    "category",
    "task",
    "subtask",
    "scene",
    "answer",
    "dataset",
    "gt",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
]


def endo_row(index: int, image: str, answer: str = "B") -> list[str]:
    options = ["Cecum", "Pylorus", "Z-line", "Duodenal bulb"]
    return [
        str(index),
        image,
        f"{index}.jpg",
        f"Which landmark is seen in frame {index}?",
        "Landmark",
        "Anatomical landmark identification",
        "Upper GI landmark",
        "Gastroscopy",
        answer,
        "Kvasir",
        options["ABCD".index(answer)],
        *options,
        "",
        "",
    ]


def test_it_imports_an_endobench_tsv_with_taxonomy_images_and_revisions(tmp_path):
    frame = jpeg_bytes("red")
    rows = [
        ENDO_HEADER,
        endo_row(1, b64(frame)),
        endo_row(2, "1", answer="C"),
        endo_row(3, b64(jpeg_bytes("green"))),
    ]
    benchmark = benchmark_import(
        path=write_tsv(tmp_path / "endo.tsv", rows), family="endobench", name="endo"
    )

    items = list(Item.objects.filter(benchmark=benchmark).order_by("source_index"))
    assert [i.source_index for i in items] == [1, 2, 3]
    second = items[1]
    assert second.answer == "C" and second.answer_text == "Z-line"
    assert second.options == ["Cecum", "Pylorus", "Z-line", "Duodenal bulb", "", ""]
    assert (second.scene, second.task, second.dataset) == (
        "Gastroscopy",
        "Anatomical landmark identification",
        "Kvasir",
    )
    assert second.extra == {"image_path": "2.jpg", "gt": "Z-line"}
    # Row 2 reuses row 1's frame: one stored image, linked to both items, bytes kept exactly.
    assert Image.objects.count() == 2
    assert items[0].item_images.get().image_id == second.item_images.get().image_id
    stored = items[0].item_images.get().image
    with default_storage.open(stored.file.name, "rb") as handle:
        assert handle.read() == frame
    assert (
        ItemRevision.objects.filter(item__benchmark=benchmark, version=1, reason="imported").count()
        == 3
    )
    assert benchmark.columns == ENDO_HEADER
    assert benchmark.taxonomy["scene"] == ["Gastroscopy"]


def test_it_stores_nothing_when_one_row_is_bad(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    rows = [
        MCQ_HEADER,
        mcq_row(1, b64(jpeg_bytes("red"))),
        mcq_row(2, "not*base64!"),
        mcq_row(3, b64(jpeg_bytes("blue")), answer="D"),
        mcq_row(4, b64(png_claiming_size(60000, 60000))),
    ]
    path = write_tsv(tmp_path / "bad.tsv", rows)

    with pytest.raises(ImportFailed) as caught:
        benchmark_import(path=path, family="vlmeval", name="bad")

    problems = [(p.row, p.column) for p in caught.value.problems]
    assert (2, "image") in problems  # broken base64
    assert (3, "answer") in problems  # D is an empty option
    assert (4, "image") in problems  # decompression bomb
    assert not Benchmark.objects.exists()
    assert (
        not Item.objects.exists() and not ItemImage.objects.exists() and not Image.objects.exists()
    )
    # The good row's image file written before the bad rows were found is removed too.
    assert [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()] == []


def test_it_refuses_a_name_that_exists(tmp_path):
    path = write_tsv(tmp_path / "ok.tsv", [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes()))])
    benchmark_import(path=path, family="vlmeval", name="taken")
    with pytest.raises(Exception, match="already exists"):
        benchmark_import(path=path, family="vlmeval", name="taken")
    assert Item.objects.count() == 1


def test_the_command_prints_the_count(tmp_path, capsys):
    path = write_tsv(
        tmp_path / "ok.tsv", [MCQ_HEADER, mcq_row(1, b64(jpeg_bytes())), mcq_row(2, "1")]
    )
    call_command("import_benchmark", str(path), family="vlmeval", name="cmd", verbosity=0)
    assert capsys.readouterr().out.strip() == "imported 2 items"


def test_the_command_lists_every_problem_and_fails(tmp_path, capsys):
    rows = [
        MCQ_HEADER,
        mcq_row(1, b64(jpeg_bytes())),
        mcq_row(1, b64(jpeg_bytes())),
        mcq_row(3, "99"),
    ]
    path = write_tsv(tmp_path / "dup.tsv", rows)
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_benchmark", str(path), family="vlmeval", name="dup", verbosity=0)
    errors = capsys.readouterr().err
    assert "row 2, column 'index'" in errors
    assert "row 3, column 'image'" in errors
    assert not Benchmark.objects.exists()


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty"),
        (b"\x00\x01\x02garbage\xff\xfe", "binary"),
        (b"index\tquestion\n1\tq\n", "missing"),
        (b'index\timage\tquestion\tA\tanswer\n1\t"abc\n', "truncated"),
        ("index\timage\tquestion\tA\tanswer\n1\tx\tcaf\xe9\tB\tA\n".encode("latin-1"), "UTF-8"),
    ],
)
def test_the_command_refuses_unreadable_files(tmp_path, content, reason):
    path = tmp_path / "broken.tsv"
    path.write_bytes(content)
    with pytest.raises(CommandError) as caught:
        call_command("import_benchmark", str(path), family="vlmeval", name="broken", verbosity=0)
    assert "nothing was imported" in str(caught.value)
    assert not Benchmark.objects.exists()
