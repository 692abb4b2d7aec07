"""A Gastric-X case yields the items of the five tasks, with the benchmark's label sets."""

from __future__ import annotations

from annotations.models import Box, Case, Item, ItemImage, ItemRevision
from annotations.services.cases import gastricx_import
from tests.cases.builders import SMALL_GEOMETRY, case_document, write_case


def test_a_case_yields_the_items_of_every_task(tmp_path, people):
    document = case_document("GX-TASKS", tnm="T4a N2 M0", site_code="H-3")
    document["reports"]["endoscopy"] = None  # a case may lack a report: no item for it
    document["vqa"][0]["qid"] = "q-17"
    document["boxes"].append(
        {"phase": "arterial", "label": "lymph_node", "voxel": [1, 1, 1, 4, 4, 3]}
    )
    document["boxes"].append({"phase": "delayed", "label": "tumor", "voxel": [9, 10, 1, 28, 38, 5]})
    write_case(tmp_path / "cases", "GX-TASKS", phases=SMALL_GEOMETRY, document=document)

    benchmark = gastricx_import(path=tmp_path / "cases", name="tasks", user=people["curator"])

    case = Case.objects.get(benchmark=benchmark)
    items = list(Item.objects.filter(case=case).order_by("source_index"))
    assert [(i.source_index, i.kind, i.task, i.category) for i in items] == [
        (1, "mcq", "tnm_classification", "tnm_classification"),
        (2, "mcq", "indicator_reasoning", "indicator_reasoning"),
        (3, "open", "report_generation", "diagnostic"),
        (4, "open", "report_generation", "ct"),
        (5, "label", "classification", "tnm"),
        (6, "label", "classification", "t"),
        (7, "label", "classification", "n"),
        (8, "label", "classification", "m"),
        (9, "box", "localization", "venous"),
        (10, "box", "localization", "delayed"),
        (11, "retrieval", "retrieval", "diagnostic"),
        (12, "retrieval", "retrieval", "ct"),
    ]
    by_index = {i.source_index: i for i in items}
    assert by_index[3].reference == document["reports"]["diagnostic"]
    assert by_index[3].target == {"report": "diagnostic"}
    assert by_index[4].reference == "Wall thickening along the greater curvature."
    assert [by_index[n].answer for n in (5, 6, 7, 8)] == ["T4aN2M0", "T4a", "N2", "M0"]
    assert by_index[6].target == {"field": "t"}
    assert by_index[12].reference == by_index[4].reference and by_index[12].target == {
        "report": "ct"
    }

    tumor = Box.objects.get(volume__case=case, volume__phase="delayed")
    assert by_index[10].target == {
        "label": "tumor",
        "phase": "delayed",
        "voxel": [9, 10, 1, 28, 38, 5],
        "mm": tumor.mm,
        "box": tumor.pk,
    }
    assert "delayed phase CT" in by_index[10].question
    # Every item starts at version 1 with its content as imported.
    revisions = dict(ItemRevision.objects.filter(item__case=case).values_list("item_id", "content"))
    assert all(revisions[i.pk] == i.content() for i in items)
    assert revisions[by_index[4].pk]["reference"] == by_index[4].reference
    # The endoscopy image goes with every item but those judged from the CT alone.
    with_image = set(
        ItemImage.objects.filter(item__case=case).values_list("item__source_index", flat=True)
    )
    assert with_image == {1, 2, 3, 5, 6, 7, 8, 11, 12}

    assert benchmark.label_sets["tnm"] == ["T4aN2M0"]
    assert benchmark.label_sets["t"] == [
        "TX",
        "T0",
        "Tis",
        "T1",
        "T1a",
        "T1b",
        "T2",
        "T3",
        "T4",
        "T4a",
        "T4b",
    ]
    assert benchmark.label_sets["m"] == ["M0", "M1"]
    assert set(benchmark.taxonomy["task"]) >= {"report_generation", "classification", "retrieval"}
    # What ClinReview does not read is kept, as given.
    assert case.tnm == "T4a N2 M0"
    assert case.extra == {"site_code": "H-3"}
    assert by_index[1].extra == {"case_id": "GX-TASKS", "qid": "q-17"}


def test_a_case_without_tnm_has_no_classification_items(tmp_path, people):
    write_case(
        tmp_path / "cases",
        "GX-NOTNM",
        phases=SMALL_GEOMETRY,
        document=case_document("GX-NOTNM", tnm=None, vqa=[]),
    )
    benchmark = gastricx_import(path=tmp_path / "cases", name="notnm", user=people["curator"])
    kinds = sorted(Item.objects.filter(benchmark=benchmark).values_list("kind", flat=True))
    assert kinds == ["box", "open", "open", "open", "retrieval", "retrieval", "retrieval"]
    assert benchmark.label_sets == {}
