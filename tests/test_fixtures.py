"""The sample files in fixtures/ import through `import_benchmark`, as docs/curators.md's "Try an
import" shows, and are exactly what `python -m demo.fixtures` writes."""

from __future__ import annotations

import filecmp
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotations.models import Benchmark, Box, Case, Item, Volume
from demo.fixtures import write_fixtures

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# (family, file under fixtures/, items it holds)
SAMPLES = [
    ("vlmeval", "vlmeval/sample_mcq.tsv", 3),
    ("endobench", "endobench/EndoBench_sample.tsv", 3),
    ("endobench", "endobench-json/EndoBench_sample.json", 3),
    ("medqdeg", "medqdeg/MedQDEG_sample.tsv", 4),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("family", "path", "items"), SAMPLES, ids=[s[1] for s in SAMPLES])
def test_each_sample_file_imports(family, path, items):
    out = StringIO()

    call_command("import_benchmark", FIXTURES / path, family=family, name="sample", stdout=out)

    benchmark = Benchmark.objects.get(name="sample")
    assert benchmark.family == family
    assert Item.objects.filter(benchmark=benchmark).count() == items
    assert not Item.objects.filter(benchmark=benchmark, item_images__isnull=True).exists()


@pytest.mark.django_db
def test_the_gastricx_sample_zip_imports_a_case_with_four_phases_and_boxes():
    call_command(
        "import_benchmark",
        FIXTURES / "gastricx/gastricx_sample.zip",
        family="gastricx",
        name="sample-gx",
        stdout=StringIO(),
    )

    case = Case.objects.get(benchmark__name="sample-gx")
    assert Volume.objects.filter(case=case).count() == 4
    assert Box.objects.filter(volume__case=case).exists()
    assert Item.objects.filter(benchmark__name="sample-gx").exists()


def _files(root: Path) -> set[Path]:
    return {path.relative_to(root) for path in root.rglob("*") if path.is_file()}


def test_the_fixtures_are_what_demo_fixtures_writes(tmp_path):
    written = write_fixtures(tmp_path)

    assert _files(FIXTURES) == _files(tmp_path)
    assert {path.relative_to(tmp_path) for _f, path in written.by_family()} <= _files(tmp_path)
    for name in _files(tmp_path):
        assert filecmp.cmp(FIXTURES / name, tmp_path / name, shallow=False), name
