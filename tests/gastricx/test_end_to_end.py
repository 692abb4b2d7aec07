"""Every kind of Gastric-X item along the real path: a zip of case folders with real DICOM is
imported, two reviewers review every item through the review pages, the adjudicator settles
each dispute through the adjudication page, a model on the loopback fake OpenAI server answers
every curated item in the code the Celery task runs, and the per-task scores are those computed
here by hand (ROUGE-L and BLEU-4 by `rouge_score` and `sacrebleu` themselves) on the REVIEWED
content; `run_model --out` writes them; the release's file of each task holds that content.

The model is right only against the reviewed content for one item of each of four kinds (the
VQA letter, the T stage, the CT report, the tumor box), so a score read from the imported
content would differ.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import warnings
from collections import Counter
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from annotations.models import Assignment, Case, Item, ItemStatus, Prediction, Run, RunStatus
from annotations.services import runs as run_services
from annotations.services.cases import gastricx_import
from annotations.services.releases import release_build, release_create
from annotations.services.review import assignments_create
from annotations.tasks.runs import run_chunk_execute
from tests.gastricx.world import (
    BOX_CORRECTED,
    CASES,
    CT_ADJUDICATED,
    CT_EDIT_A,
    CT_EDIT_B,
    GENERATED,
    REJECTED_PAIR,
    REPORTS,
    T_CORRECTED,
    TUMOR,
    VQA_CORRECTED,
    FakeModel,
    write_cases,
)
from tests.runs.helpers import make_endpoint
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.page_forms import PageForm

BOX_FIELDS = ("x0", "y0", "z0", "x1", "y1", "z1")
REPORT_KINDS = ("diagnostic", "ct", "endoscopy")
FIELDS = ("tnm", "t", "n", "m")
REVIEW_FORM = "//form[@data-review-form]"
ADJUDICATE_FORM = "//form[@data-adjudicate-form]"


def key(case: str, task: str, category: str) -> tuple[str, str, str]:
    return (case, task, category)


E1_VQA = key("GX-E-1", "vqa", "vqa")
E1_T = key("GX-E-1", "classification", "t")
E1_CT = key("GX-E-1", "report_generation", "ct")
E1_BOX = key("GX-E-1", "localization", "venous")
E2_PAIR = key(REJECTED_PAIR[0], "retrieval", REJECTED_PAIR[1])
DISPUTES = {E1_VQA, E1_T, E1_CT, E1_BOX, E2_PAIR}

# The first reviewer corrects one item of each kind but retrieval; the second edits the CT
# report otherwise and rejects a retrieval pair. Everything else both accept. Each decision is
# what a clinician changes on the review page: the fields they type into, then the button.
EDIT = "//button[@data-verdict='edit']"
FIRST_REVIEWER = {
    E1_VQA: ({"answer_pick": "ABC".index(VQA_CORRECTED)}, EDIT),
    E1_T: ({"label": T_CORRECTED}, EDIT),
    E1_CT: ({"reference": CT_EDIT_A}, EDIT),
    E1_BOX: (dict(zip(BOX_FIELDS, BOX_CORRECTED, strict=True)), EDIT),
}
SECOND_REVIEWER = {
    E1_CT: ({"reference": CT_EDIT_B}, EDIT),
    E2_PAIR: ({"reason": "wrong_answer"}, "//button[@data-verdict='reject']"),
}
ACCEPT = ({}, "//button[@data-verdict='accept']")


def items_by_key(benchmark) -> dict[tuple[str, str, str], Item]:
    rows = Item.objects.filter(benchmark=benchmark).select_related("case")
    found = {key(item.case.case_id, item.task, item.category): item for item in rows}
    assert len(found) == rows.count()  # one item per (case, task, category)
    return found


def import_cases(tmp_path: Path, people: dict):
    """The three case folders zipped, as an upload is, and imported."""
    archive = shutil.make_archive(str(tmp_path / "upload"), "zip", write_cases(tmp_path / "cases"))
    benchmark = gastricx_import(path=Path(archive), name="gx-e2e", user=people["curator"])
    items = items_by_key(benchmark)
    for case in CASES:
        kinds = sorted(item.kind for (c, _t, _k), item in items.items() if c == case)
        assert kinds == ["box"] + ["label"] * 4 + ["mcq"] + ["open"] * 3 + ["retrieval"] * 3
    assert benchmark.label_sets["tnm"] == ["T2N0M0", "T3N1M0", "T4aN2M1"]
    assert items[E1_T].answer == "T3" and items[E1_BOX].target["voxel"] == TUMOR
    assert items[E1_CT].reference == REPORTS["GX-E-1"]["ct"] and items[E1_VQA].answer == "B"
    assert Case.objects.get(case_id="GX-E-1").volumes.get(phase="venous").dicom_path
    assignments_create(
        benchmark=benchmark,
        reviewers=[people["reviewer"], people["reviewer2"]],
        per_item=2,
        assigned_by=people["curator"],
    )
    return benchmark, items


def review_all(client, reviewer, items: dict, decisions: dict) -> None:
    """`reviewer` decides every item through its review page's rendered form."""
    client.force_login(reviewer)
    for name, item in items.items():
        changes, button = decisions.get(name, ACCEPT)
        form = PageForm(client.get(reverse("review-item", args=[item.pk])), REVIEW_FORM)
        for field, typed in changes.items():
            form.set(field, typed)
        response = form.press(button).submit(client)
        assert response.status_code == 302, (name, response.content.decode()[:300])


def adjudicate_all(client, people: dict, items: dict) -> None:
    """The adjudicator settles each dispute through its page's rendered form: the first
    reviewer's corrections and confirmation are taken; the two report edits give way to a
    third version."""
    client.force_login(people["adjudicator"])
    for name in DISPUTES:
        item = Item.objects.get(pk=items[name].pk)
        assert item.status == ItemStatus.DISPUTED, name
        form = PageForm(client.get(reverse("adjudicate", args=[item.pk])), ADJUDICATE_FORM)
        slot = Assignment.objects.get(item=item, reviewer=people["reviewer"]).slot
        if name == E1_CT:
            form.set("reference", CT_ADJUDICATED).press(
                "//button[@data-choice='new'][not(@data-reject)]"
            )
        else:
            form.press(f"//button[@data-choice='{'ab'[slot - 1]}']")
        response = form.submit(client)
        assert response.status_code == 302, (name, response.content.decode()[:300])


def check_reviewed(items: dict) -> dict:
    fresh = {name: Item.objects.get(pk=item.pk) for name, item in items.items()}
    statuses = {name: item.status for name, item in fresh.items()}
    assert {n for n, s in statuses.items() if s == ItemStatus.ADJUDICATED} == DISPUTES
    assert all(s in (ItemStatus.AGREED, ItemStatus.ADJUDICATED) for s in statuses.values())
    assert fresh[E1_VQA].answer == VQA_CORRECTED
    assert fresh[E1_T].answer == T_CORRECTED
    assert fresh[E1_CT].reference == CT_ADJUDICATED
    assert fresh[E1_BOX].target["voxel"] == BOX_CORRECTED
    assert fresh[E1_BOX].target["box"] == items[E1_BOX].target["box"]  # the same tumor
    assert fresh[E2_PAIR].reference == REPORTS["GX-E-2"]["diagnostic"]
    assert {fresh[n].version for n in DISPUTES} == {2}
    return fresh


def run_model(benchmark, model: FakeModel) -> Run:
    """A run over the curated items, answered by the Celery task of its first chunk (which
    goes on with the run's waiting chunks and finishes the run)."""
    with FakeOpenAIServer(model.chat, embeddings=model.embeddings) as server:
        run = run_services.run_create(
            benchmark=benchmark,
            endpoint=make_endpoint(server.base_url),
            filters={"status": ["curated"]},
            enqueue=False,
        )
        for chunk_id in run.chunks.order_by("number").values_list("pk", flat=True):
            run_chunk_execute(chunk_id)
    run.refresh_from_db()
    assert model.unknown == []
    errors = list(Prediction.objects.filter(run=run).exclude(error="").values_list("error"))
    assert (run.status, run.completed, run.failed, errors) == (RunStatus.DONE, 36, 0, [])
    return run


def check_predictions(run: Run, fresh: dict) -> None:
    def prediction(name) -> Prediction:
        return Prediction.objects.get(run=run, item=fresh[name])

    # Asked and read against the reviewed versions.
    assert {prediction(name).item_version for name in DISPUTES} == {2}
    assert prediction(E1_T).label == T_CORRECTED and prediction(E1_T).hit is True
    assert prediction(E1_VQA).extracted == VQA_CORRECTED and prediction(E1_VQA).hit is True
    assert prediction(E1_BOX).box == BOX_CORRECTED
    # GX-E-1's corrected box spans z 1..5: asked on slices 0, 2, 4 and 6.
    assert sorted(prediction(E1_BOX).slice_boxes) == ["0", "2", "4", "6"]
    assert prediction(key("GX-E-2", "localization", "venous")).box == [8, 10, 2, 13, 30, 6]
    assert prediction(key("GX-E-3", "localization", "venous")).box is None
    ranks = [
        (prediction(key(case, "retrieval", kind)).report_to_case_rank,
         prediction(key(case, "retrieval", kind)).case_to_report_rank)
        for case in CASES for kind in REPORT_KINDS
    ]  # fmt: skip
    assert ranks == [(1, 1), (1, 1), (2, 1), (1, 1), (1, 1), (2, 1), (1, 2), (1, 2), (1, 2)]


def value(block: dict, name: str) -> float:
    return block[name]["value"]


def hand_scores() -> dict[str, dict[str, float]]:
    """The issue's metrics, worked out by hand from world.py's answers."""
    return {
        # GX-E-1 C (right after the correction), GX-E-2 A (right), GX-E-3 A (gold B).
        "vqa": {"accuracy": 2 / 3},
        # Right: GX-E-1 all four (T4a after the correction), GX-E-2 T2 and M0, GX-E-3 the
        # whole code and N2: 8 of 12. Macro-F1 per field, 2·TP / (predicted + true) per label
        # seen: tnm T3N1M0 2/3, T2N0M0 0, T4aN2M1 1 -> 5/9; t T4a 2/3, T2 1, T4b 0 -> 5/9;
        # n N1 2/3, N0 0, N2 1 -> 5/9; m M0 2·2/(3+2) = 4/5, M1 0 -> 2/5. Mean over fields.
        "classification": {"accuracy": 8 / 12, "macro_f1_no_support": (5 / 9 * 3 + 2 / 5) / 4},
        # IoU 1 (GX-E-1 on the corrected box), 1/4 (GX-E-2), 0 (GX-E-3: no box). AP@0.5: one
        # operating point, precision 1/2 (two boxes, one hit) at recall 1/3.
        "localization": {"mean_iou": (1 + 1 / 4 + 0) / 3, "ap50": 1 / 2 * 1 / 3},
        # report -> case ranks 1,1,2, 1,1,2, 1,1,1 (recall@1 7/9); case -> report ranks 1, 1,
        # 2 (recall@1 2/3); each top-level value is the mean of the two directions.
        "retrieval": {
            "recall_at_1": (7 / 9 + 2 / 3) / 2,
            "recall_at_5": 1.0,
            "recall_at_10": 1.0,
            "median_rank": 1.0,
        },
    }


def report_scores(references: dict) -> dict[str, float]:
    """ROUGE-L and BLEU-4 by the reference implementations, on `references` by (case, kind)."""
    pairs = [(references[case][kind], GENERATED[case][kind]) for case in CASES for kind in
             REPORT_KINDS]  # fmt: skip
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    rouge = sum(scorer.score(ref, gen)["rougeL"].fmeasure for ref, gen in pairs) / len(pairs)
    bleu = BLEU().corpus_score([gen for _r, gen in pairs], [[ref for ref, _g in pairs]])
    return {"rouge_l": rouge, "bleu4": bleu.score / 100}


def sklearn_macro_f1(run: Run, label_sets: dict) -> float:
    """scikit-learn's macro-F1 with its defaults over each field's label set, mean over fields."""
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import f1_score

    by_field: dict[str, tuple[list, list]] = {}
    rows = Prediction.objects.filter(run=run, item__kind="label").select_related("item")
    for prediction in rows:
        field = (prediction.item.target or {}).get("field") or "label"
        truth, predicted = by_field.setdefault(field, ([], []))
        truth.append(prediction.item.answer)
        predicted.append(prediction.label or "(none)")
    with warnings.catch_warnings():  # its warning: a label neither true nor given scores 0
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        scores = [
            f1_score(truth, predicted, labels=label_sets[field], average="macro")
            for field, (truth, predicted) in by_field.items()
        ]
    return sum(scores) / len(scores)


def reviewed_references() -> dict:
    references = {case: dict(reports) for case, reports in REPORTS.items()}
    references["GX-E-1"]["ct"] = CT_ADJUDICATED
    return references


def check_scores(tasks: dict, expected: dict) -> None:
    for task, metrics in expected.items():
        for name, number in metrics.items():
            assert value(tasks[task], name) == pytest.approx(number), (task, name)


def run_model_out(benchmark, model: FakeModel, tmp_path: Path) -> dict:
    out = tmp_path / "scores.json"
    with FakeOpenAIServer(model.chat, embeddings=model.embeddings) as server:
        call_command(
            "run_model", benchmark.name, "--base-url", server.base_url, "--model", "fake-model",
            "--out", str(out), stdout=StringIO(), verbosity=0,
        )  # fmt: skip
    return json.loads(out.read_text())


def test_every_kind_goes_from_import_to_scores_on_its_reviewed_content(tmp_path, people, client):
    # import
    benchmark, items = import_cases(tmp_path, people)

    # review: both reviewers decide every item; five disputes, one of each kind
    review_all(client, people["reviewer"], items, FIRST_REVIEWER)
    review_all(client, people["reviewer2"], items, SECOND_REVIEWER)
    statuses = dict(Item.objects.filter(benchmark=benchmark).values_list("pk", "status"))
    assert {n for n, i in items.items() if statuses[i.pk] == ItemStatus.DISPUTED} == DISPUTES

    # adjudication
    adjudicate_all(client, people, items)
    fresh = check_reviewed(items)

    # run
    model = FakeModel.of(list(Case.objects.filter(benchmark=benchmark).order_by("case_id")))
    run = run_model(benchmark, model)
    check_predictions(run, fresh)

    # scores
    tasks = run.summary["tasks"]
    expected = hand_scores()
    expected["report_generation"] = report_scores(reviewed_references())
    expected["classification"]["macro_f1"] = sklearn_macro_f1(run, benchmark.label_sets)
    check_scores(tasks, expected)
    assert tasks["counts"] == {
        "vqa": 3, "classification": 12, "report_generation": 9, "localization": 3,
        "retrieval": 9,
    }  # fmt: skip
    # Read from the imported content, the scores would not be these.
    imported = report_scores(REPORTS)
    assert value(tasks["report_generation"], "rouge_l") != pytest.approx(imported["rouge_l"])
    assert value(tasks["report_generation"], "bleu4") != pytest.approx(imported["bleu4"])
    assert run.summary["overall"]["accuracy"] == pytest.approx((2 + 8) / 15)

    # run_model --out
    document = run_model_out(benchmark, model, tmp_path)
    assert {task: set(metrics) for task, metrics in document["tasks"].items()} == {
        "vqa": {"accuracy"},
        "classification": {"accuracy", "macro_f1", "macro_f1_no_support"},
        "report_generation": {"rouge_l", "bleu4"},
        "localization": {"mean_iou", "ap50", "coco_ap50", "coco_ap", "slice_iou"},
        "retrieval": {"recall_at_1", "recall_at_5", "recall_at_10", "median_rank"},
    }
    check_scores(document["tasks"], expected)

    # release
    release = release_create(
        benchmark=benchmark, name="GastricXE2E", version="1.0", user=people["curator"]
    )
    release = release_build(release=release)
    assert release.status == "published"
    check_release(Path(release.path), items)


def check_release(folder: Path, items: dict) -> None:
    """Each task's file holds the reviewed content of its items, read as its users read it."""
    index = {name: item.source_index for name, item in items.items()}
    kinds = Counter(item.kind for item in items.values())
    mcq = pd.read_csv(folder / "GastricXE2E.tsv", sep="\t").set_index("index")
    assert len(mcq) == kinds["mcq"] + kinds["label"] == 15
    assert mcq.loc[index[E1_VQA], "answer"] == VQA_CORRECTED
    t_row = mcq.loc[index[E1_T]]
    assert t_row[t_row["answer"]] == T_CORRECTED  # the letter names the corrected T stage
    reports = pd.read_csv(folder / "GastricXE2E_report.tsv", sep="\t").set_index("index")
    assert len(reports) == kinds["open"] == 9
    assert reports.loc[index[E1_CT], "answer"] == CT_ADJUDICATED
    assert all(ast.literal_eval(cell) for cell in reports["image"])  # every row has images
    localization = json.loads((folder / "GastricXE2E_localization.json").read_text())
    boxes = {box["item_index"]: box for box in localization["boxes_3d"]}
    assert len(boxes) == kinds["box"] == 3
    assert boxes[index[E1_BOX]]["voxel"] == BOX_CORRECTED
    retrieval = json.loads((folder / "GastricXE2E_retrieval.json").read_text())
    pairs = {pair["index"]: pair for pair in retrieval["pairs"]}
    assert len(pairs) == kinds["retrieval"] == 9
    assert pairs[index[E2_PAIR]]["case_id"] == REJECTED_PAIR[0]  # kept by the adjudicator
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, digests in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert digests["md5"] == hashlib.md5(data).hexdigest(), name
        assert digests["sha256"] == hashlib.sha256(data).hexdigest(), name
    assert {"GastricXE2E_report.tsv", "GastricXE2E_localization.json"} <= set(manifest["files"])
    assert "GastricXE2E_retrieval.json" in manifest["files"]
