"""A release reproduces its run: a Gastric-X and a MedQ-DEG benchmark are run through the loopback
fake OpenAI endpoint (`run_model --out`), released, and then, from the release files alone:

- the prompts VLMEvalKit builds for each TSV (re-implemented below as its code at the pinned
  commit does: `build_dataset` picks CustomMCQ / CustomVQA for a local file by its columns,
  `ImageMCQDataset.build_prompt`, `ImageBaseDataset.build_prompt`, `MedQDEGBenchDataset.
  build_prompt`, with the class the release's manifest names) are exactly, text and images, what
  the endpoint received; the localization prompts too, from NAME_localization.json;
- `python -m annotations.scoring`, run in a process where Django cannot be imported and no
  settings module is set, prints `run_model --out`'s `overall`, `tasks` and `task_details`;
- pycocotools, fed COCO files made here from NAME_localization.json and the predictions,
  gives the COCO figures the scores report.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import shutil
import string
import subprocess
import sys
from collections import Counter
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.conf import settings
from django.core.management import call_command

from annotations.inference.task_prompts import build_localization_prompt, ct_slice_label
from annotations.models import Case
from annotations.services.cases import gastricx_import
from annotations.services.releases import release_build, release_create
from tests.gastricx.world import FakeModel, write_cases
from tests.runs.helpers import make_run_benchmark
from tests.support.fake_openai import FakeOpenAIServer, answer_letter, image_digests, prompt_text

pytestmark = pytest.mark.django_db


# --- VLMEvalKit, as its code reads a TSV and builds prompts ------------------------------------


def vlmeval_rows(tsv: Path) -> list[dict]:
    """The rows as `ImageBaseDataset.__init__` leaves them: an image cell of 1-64 characters is
    the index of the row whose image it reuses; a list literal is a list of images."""
    data = pd.read_csv(tsv, sep="\t")
    data["index"] = [str(x) for x in data["index"]]
    cells = {k: str(v) for k, v in zip(data["index"], data["image"], strict=True)}
    for key, cell in cells.items():
        if 0 < len(cell) <= 64:
            assert len(cells[cell]) > 64
            cells[key] = cells[cell]
    rows = []
    for record in data.to_dict("records"):
        cell = cells[record["index"]]
        images = ast.literal_eval(cell) if cell.startswith("[") else [cell]
        rows.append({**record, "image": images})
    return rows


def mcq_prompt(line: dict) -> str:  # ImageMCQDataset.build_prompt
    options = {c: line[c] for c in string.ascii_uppercase if c in line and not pd.isna(line[c])}
    hint = line["hint"] if ("hint" in line and not pd.isna(line["hint"])) else None
    prompt = f"Hint: {hint}\n" if hint is not None else ""
    prompt += f"Question: {line['question']}\n"
    if options:
        prompt += "Options:\n" + "".join(f"{k}. {v}\n" for k, v in options.items())
        prompt += "Please select the correct answer from the options above. \n"
    return prompt


def vqa_prompt(line: dict) -> str:  # ImageBaseDataset.build_prompt (CustomVQADataset)
    return line["question"]


def medqdeg_prompt(line: dict) -> str:  # MedQDEGBenchDataset.build_prompt
    options = {}
    for opt in "ABCDE":
        if opt in line and pd.notna(line[opt]) and str(line[opt]).strip():
            options[opt] = str(line[opt]).strip()
    option_text = "\n".join(f"{k}. {v}" for k, v in options.items())
    return (
        f"{line['question']}\n\n{option_text}\n\n"
        "Answer with the option letter from the given choices directly."
    )


BUILDERS = {
    "CustomMCQDataset": mcq_prompt,
    "CustomVQADataset": vqa_prompt,
    "MedQDEGBenchDataset": medqdeg_prompt,
}


def build_dataset_class(tsv: Path) -> str:
    """`vlmeval.dataset.build_dataset` for a name it does not know: by the file's columns."""
    columns = pd.read_csv(tsv, sep="\t", nrows=0).columns
    return "CustomMCQDataset" if "A" in columns and "B" in columns else "CustomVQADataset"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def release_prompts(folder: Path) -> Counter:
    """(prompt text, image digests) of every TSV row, as VLMEvalKit asks them."""
    manifest = json.loads((folder / "manifest.json").read_text())
    found: Counter = Counter()
    for file_name, entry in manifest["reproduce"]["files"].items():
        tsv = folder / file_name
        if entry["dataset_class"] != "MedQDEGBenchDataset":  # a local file under its own name
            assert entry["dataset_class"] == build_dataset_class(tsv), file_name
            assert entry["data"] == file_name.removesuffix(".tsv")
        build = BUILDERS[entry["dataset_class"]]
        for line in vlmeval_rows(tsv):
            digests = tuple(sha(base64.b64decode(image)) for image in line["image"])
            found[(build(line), digests)] += 1
    return found


def sent(requests: list[dict]) -> Counter:
    return Counter((prompt_text(r), tuple(image_digests(r))) for r in requests)


# --- the standalone scorer, where Django cannot be imported ------------------------------------

NO_DJANGO = (
    "import runpy, sys; sys.modules['django'] = None; sys.argv = ['scoring', *sys.argv[1:]]; "
    "runpy.run_module('annotations.scoring', run_name='__main__', alter_sys=True)"
)


def standalone_scores(folder: Path, predictions: Path, *extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", NO_DJANGO, str(folder), str(predictions), *extra],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run_model_out(name: str, server: FakeOpenAIServer, out: Path) -> dict:
    call_command(
        "run_model", name, "--base-url", server.base_url, "--model", "fake-model",
        "--out", str(out), "--seed", "3", stdout=StringIO(), verbosity=0,
    )  # fmt: skip
    return json.loads(out.read_text())


def released(benchmark, name: str) -> Path:
    release = release_create(benchmark=benchmark, name=name, version="1.0", include_all=True)
    release = release_build(release=release)
    assert release.status == "published", release.error
    return Path(release.path)


# --- the tests -----------------------------------------------------------------------------------


def test_a_gastricx_release_asks_what_the_run_asked_and_scores_what_it_scored(tmp_path, people):
    archive = shutil.make_archive(str(tmp_path / "up"), "zip", write_cases(tmp_path / "cases"))
    benchmark = gastricx_import(path=Path(archive), name="gx-repro", user=people["curator"])
    model = FakeModel.of(list(Case.objects.filter(benchmark=benchmark).order_by("case_id")))
    with FakeOpenAIServer(model.chat, embeddings=model.embeddings) as server:
        document = run_model_out(benchmark.name, server, tmp_path / "out.json")
        requests = server.requests
    assert model.unknown == []
    folder = released(benchmark, "GxRepro")

    # Every TSV row's prompt, text and images, is one the endpoint received, and every request
    # is a TSV row's: the localization ones too (NAME_localization.tsv, a row per image asked).
    from_release = release_prompts(folder)
    asked = sent(requests)
    assert from_release == asked
    located = sum(n for (p, _d), n in asked.items() if "Locate the" in p)
    assert sum(asked.values()) - located == 3 + 12 + 9  # VQA, classification, reports
    assert located == sum(len(i["slices"]) for i in json.loads(
        (folder / "GxRepro_localization.json").read_text())["items"])  # fmt: skip
    report = next(p for p, _d in from_release if "Biochemical indicators:" in p)
    assert "- CEA: 12.4 ng/mL (reference range 0-5 ng/mL)" in report
    assert "- CA72-4: 3.1 U/mL\n" in report  # no reference range

    # The localization prompts, from NAME_localization.json: each 3D target's slices.
    localization = json.loads((folder / "GxRepro_localization.json").read_text())
    shapes = {box["item_index"]: box["shape_zyx"] for box in localization["boxes_3d"]}
    expected = Counter()
    for item in localization["items"]:
        size_z, height, width = shapes[item["index"]]
        for z in item["slices"]:
            label = ct_slice_label(item["phase"], z, size_z)
            prompt = build_localization_prompt(
                item["label"], image_label=label, width=width, height=height
            )
            expected[prompt] += 1
    assert expected == Counter(prompt_text(r) for r in requests if "Locate the" in prompt_text(r))

    # The standalone scorer prints run_model --out's blocks, to the last digit.
    scores = standalone_scores(folder, tmp_path / "out.json")
    for block in ("overall", "tasks", "task_details"):
        assert scores[block] == document[block], block
    assert document["tasks"]["localization"]["coco_ap50"]["value"] is not None

    # VLMEvalKit's replies to NAME_localization.tsv's rows score as the run's boxes did.
    check_localization_replies(folder, document, requests, model, tmp_path)

    # pycocotools, on COCO files made from the release and the predictions.
    check_pycocotools(localization, document, tmp_path)

    # NAME_coco.json holds every localization target's box, on its CT slice's image entry.
    coco = json.loads((folder / "GxRepro_coco.json").read_text())
    assert len(coco["annotations"]) == len(localization["annotations"]) == 3
    slices = {image["id"]: image for image in coco["images"]}
    assert all("phase" in slices[a["image_id"]] for a in coco["annotations"])


def check_pycocotools(localization: dict, document: dict, tmp_path: Path) -> None:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    truths = {box["item_index"]: box["voxel"] for box in localization["boxes_3d"]}
    answers = {row["index"]: row.get("slice_boxes") or {} for row in document["predictions"]}
    images, annotations, detections = [], [], []
    for item in localization["items"]:
        x0, y0, z0, x1, y1, z1 = truths[item["index"]]
        for z in item["slices"]:
            images.append({"id": len(images) + 1})
            if z0 <= z < z1:
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": len(images), "category_id": 1,
                     "bbox": [x0, y0, x1 - x0, y1 - y0], "area": (x1 - x0) * (y1 - y0),
                     "iscrowd": 0}
                )  # fmt: skip
            box = answers[item["index"]].get(str(z))
            if box:
                bx0, by0, bx1, by1 = box
                detections.append(
                    {"image_id": len(images), "category_id": 1,
                     "bbox": [bx0, by0, bx1 - bx0, by1 - by0], "score": 1.0}
                )  # fmt: skip
    truth_file, found_file = tmp_path / "gt.json", tmp_path / "dt.json"
    categories = [{"id": 1, "name": "tumor"}]
    truth_file.write_text(
        json.dumps({"images": images, "annotations": annotations, "categories": categories})
    )
    found_file.write_text(json.dumps(detections))
    ground = COCO(str(truth_file))
    evaluation = COCOeval(ground, ground.loadRes(str(found_file)), iouType="bbox")
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    tasks = document["tasks"]["localization"]
    assert tasks["coco_ap"]["value"] == pytest.approx(evaluation.stats[0], abs=1e-12)
    assert tasks["coco_ap50"]["value"] == pytest.approx(evaluation.stats[1], abs=1e-12)
    assert tasks["coco_ap50"]["n"] == len(images)


def test_a_medqdeg_release_is_asked_with_medqdegs_prompt_under_the_name_vlmevalkit_gives_it(
    tmp_path,
):
    benchmark, _items = make_run_benchmark(
        5, family="medqdeg", name="mq-repro", modality="CT", degradation_type="low_dose",
        degradation_severity="mild", options=[" Polyp ", "Ulcer", "Normal", "Bleeding", ""],
    )  # fmt: skip
    with FakeOpenAIServer(answer_letter("B")) as server:
        document = run_model_out(benchmark.name, server, tmp_path / "out.json")
        requests = server.requests
    folder = released(benchmark, "MqRepro")

    manifest = json.loads((folder / "manifest.json").read_text())
    entry = manifest["reproduce"]["files"]["MqRepro.tsv"]
    assert (entry["dataset_class"], entry["data"]) == (
        "MedQDEGBenchDataset",
        "MedQDEGBench_simulate_test",
    )
    assert entry["place"].endswith("/MedQ-Robust-simulate-test.tsv")
    assert "python run.py --data MedQDEGBench_simulate_test" in (folder / "README.md").read_text()
    from_release = release_prompts(folder)
    assert from_release == sent(requests) and sum(from_release.values()) == 5
    check_medqdeg_setup(folder, entry, tmp_path / "copy")

    scores = standalone_scores(folder, tmp_path / "out.json")
    for block in ("overall", "tasks", "task_details"):
        assert scores[block] == document[block], block
    assert (
        scores["overall"] == document["overall"] == pytest.approx(2 / 5)
    )  # gold B at indices 1 and 5


def check_medqdeg_setup(folder: Path, entry: dict, copy: Path) -> None:
    """The README's setup lines, run in a copy of the release, leave the file where VLMEvalKit's
    `get_cache_path` + `check_integrity` find it: the snapshot `refs/main` names, exactly."""
    shutil.copytree(folder, copy)
    script = "set -e\n" + "\n".join(entry["setup"]) + '\necho "$HF_HUB_CACHE"\n'
    done = subprocess.run(["bash", "-c", script], cwd=copy, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    hub = Path(done.stdout.strip())
    assert hub.name == "hub"  # HFCacheRoot takes $HF_HUB_CACHE as it is only then
    repo = hub / "datasets--jiyaoliufd--MedQ-DEG-Bench"
    snapshot = (repo / "refs" / "main").read_text()
    placed = repo / "snapshots" / snapshot / "MedQ-Robust-simulate-test.tsv"
    assert placed.read_bytes() == (folder / "MqRepro.tsv").read_bytes()


def check_localization_replies(folder, document, requests, model, tmp_path) -> None:
    """Predictions as VLMEvalKit writes them for NAME_localization.tsv (a reply per row, by its
    index), beside the other items' rows: the scorer reads the boxes and scores them alike."""
    rows = {}
    for line in vlmeval_rows(folder / "GxRepro_localization.tsv"):
        digests = tuple(sha(base64.b64decode(image)) for image in line["image"])
        rows[(line["question"], digests)] = int(line["index"])
    lines = [row for row in document["predictions"] if row.get("kind") != "box"]
    for request in requests:
        key = (prompt_text(request), tuple(image_digests(request)))
        if key in rows:
            lines.append({"index": rows[key], "prediction": model.chat(request, 1).text})
    assert len(lines) == len(document["predictions"]) - 3 + sum(1 for k in rows)
    path = tmp_path / "vlmeval.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scores = standalone_scores(folder, path, "--seed", str(document["seed"]))
    assert scores["tasks"] == document["tasks"]
