"""How a release is run in VLMEvalKit and scored again: the manifest's `reproduce` block and
the README.md written beside it.

Per TSV, the exact `run.py --data NAME`, where the file goes and which of VLMEvalKit's classes
builds its prompts (read from VLMEvalKit at the pinned commit, see docs/releases.md):
- a name VLMEvalKit does not know, with a local `$LMUData/NAME.tsv`, is a CustomMCQDataset when
  the file has A and B columns (the generic multiple-choice prompt, `ImageMCQDataset.
  build_prompt`), else a CustomVQADataset (the images, then the question cell alone), by
  `vlmeval/dataset/__init__.py` `build_dataset`;
- MedQ-DEG's own prompt and evaluator only come with its four `MedQDEGBench_*` names, whose
  file is read from the Hugging Face cache of `jiyaoliufd/MedQ-DEG-Bench` (`MedQDEGBenchDataset.
  prepare_dataset`, `smp/misc.py` `get_cache_path`), never from `$LMUData`. A MedQ-DEG release
  therefore names `MedQDEGBench_simulate_test` and says where in a cache folder of its own the
  file goes; our runs ask MedQ-DEG items with that prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MEDQDEG_DATA = "MedQDEGBench_simulate_test"
MEDQDEG_REPO_FOLDER = "datasets--jiyaoliufd--MedQ-DEG-Bench"
MEDQDEG_FILE = "MedQ-Robust-simulate-test.tsv"
MEDQDEG_SNAPSHOT = "clinreview"
SCORER = "python -m annotations.scoring RELEASE_DIR PREDICTIONS.json"


def _local(data: str, file_name: str, dataset_class: str, prompt: str) -> dict[str, Any]:
    return {
        "data": data,
        "place": f"$LMUData/{data}.tsv",
        "setup": [f'cp {file_name} "$LMUData/{data}.tsv"'],
        "command": f"python run.py --data {data} --model YOUR_MODEL",
        "dataset_class": dataset_class,
        "prompt": prompt,
    }


MCQ_PROMPT = (
    "ImageMCQDataset.build_prompt: the images, then 'Hint: ...' (if any), 'Question: ...', "
    "'Options:' and one 'X. text' line per non-empty option, then 'Please select the correct "
    "answer from the options above. '"
)
VQA_PROMPT = (
    "ImageBaseDataset.build_prompt: the images (the image-list cell), then the question cell"
)
MEDQDEG_PROMPT = (
    "MedQDEGBenchDataset.build_prompt: the images, then '{question}\\n\\n{A. ...}\\n\\nAnswer "
    "with the option letter from the given choices directly.'"
)


def _medqdeg(file_name: str) -> dict[str, Any]:
    cache = f"$HF_HUB_CACHE/{MEDQDEG_REPO_FOLDER}"
    return {
        "data": MEDQDEG_DATA,
        "place": f"{cache}/snapshots/{MEDQDEG_SNAPSHOT}/{MEDQDEG_FILE}",
        "setup": [
            "export HF_HUB_CACHE=$PWD/vlmeval_hub/hub  # a cache folder of its own, ending in /hub",
            f"mkdir -p {cache}/snapshots/{MEDQDEG_SNAPSHOT} {cache}/refs",
            f"cp {file_name} {cache}/snapshots/{MEDQDEG_SNAPSHOT}/{MEDQDEG_FILE}",
            f"printf {MEDQDEG_SNAPSHOT} > {cache}/refs/main",
        ],
        "command": f"python run.py --data {MEDQDEG_DATA} --model YOUR_MODEL",
        "dataset_class": "MedQDEGBenchDataset",
        "prompt": MEDQDEG_PROMPT,
    }


def reproduce_block(name: str, family: str, layout: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's `reproduce` block: per TSV the VLMEvalKit command, and our scorer."""
    from annotations.scoring.vlmeval import VLMEVAL_COMMIT, VLMEVAL_REPOSITORY

    files: dict[str, Any] = {}
    main = f"{name}.tsv"
    if family == "medqdeg":
        files[main] = {**_medqdeg(main), "scores": "MedQDEGBenchDataset.evaluate"}
    else:
        files[main] = {
            **_local(name, main, "CustomMCQDataset", MCQ_PROMPT),
            "scores": "CustomMCQDataset.evaluate (exact matching without a judge model)",
        }
    for part in layout.get("parts", []):
        stem = part["tsv"].removesuffix(".tsv")
        files[part["tsv"]] = {
            **_local(stem, part["tsv"], "CustomMCQDataset", MCQ_PROMPT),
            "scores": f"CustomMCQDataset.evaluate over this part's rows ({main} holds them all)",
        }
    if "test" in layout:
        test = layout["test"]["tsv"]
        entry = _medqdeg(test) if family == "medqdeg" else None
        files[test] = entry or _local(
            test.removesuffix(".tsv"), test, "CustomMCQDataset", MCQ_PROMPT
        )
        files[test]["scores"] = "none: answers withheld (NAME_test_answers.json)"
    report = layout.get("report")
    if report:
        for key in ("tsv", "test_tsv"):
            if key in report:
                stem = report[key].removesuffix(".tsv")
                files[report[key]] = {
                    **_local(stem, report[key], "CustomVQADataset", VQA_PROMPT),
                    "scores": "CustomVQADataset.evaluate raises NotImplementedError: "
                    f"score the predictions with `{SCORER}`",
                }
    localization = layout.get("localization") or {}
    if "tsv" in localization:
        tsv = localization["tsv"]
        files[tsv] = {
            **_local(tsv.removesuffix(".tsv"), tsv, "CustomVQADataset", VQA_PROMPT),
            "scores": "one row per image asked (its answer: the box on it, or none); "
            "CustomVQADataset.evaluate raises NotImplementedError: score with "
            f"`{SCORER}`, its replies as JSON lines of the rows' index and prediction",
        }
    return {
        "vlmevalkit": {"repository": VLMEVAL_REPOSITORY, "commit": VLMEVAL_COMMIT},
        "files": files,
        "scorer": SCORER,
        "predictions": "run_model --out FILE.json, or JSONL lines {task, index, prediction, ...} "
        "(docs/releases.md)",
    }


def readme_text(name: str, benchmark: str, version: str, reproduce: Mapping[str, Any]) -> str:
    """README.md of a release: the files, one command per TSV, the scorer."""
    lines = [
        f"# {name}" + (f" {version}" if version else ""),
        "",
        f"A release of the benchmark {benchmark} written by ClinReview. manifest.json lists "
        "every file with its md5 and sha256; NAME.json holds every item with its provenance.",
        "",
        f"## Asking a model in VLMEvalKit ({reproduce['vlmevalkit']['repository']} at commit "
        f"{reproduce['vlmevalkit']['commit']})",
        "",
        "Each TSV below, put where it says and run with the name it says, gives the model "
        "exactly the prompts (text and images) our runs sent.",
    ]
    for file_name, entry in reproduce["files"].items():
        lines += [
            "",
            f"### {file_name}",
            "",
            f"- VLMEvalKit reads it as `{entry['dataset_class']}`: {entry['prompt']}.",
            f"- Put it at `{entry['place']}`; in the folder of this release:",
            "",
            "```",
            *entry["setup"],
            entry["command"],
            "```",
            "",
            f"- Scores: {entry['scores']}.",
        ]
    lines += [
        "",
        "Report rows: the question cell is the whole prompt (the case's description, each "
        "image's name, the biochemical indicators where asked, the instruction); the image "
        "cell is always a list of base64 images, in the order they are sent.",
        "",
        "## Scoring any predictions",
        "",
        "```",
        reproduce["scorer"],
        "```",
        "",
        "reads this folder and a predictions file (the JSON `run_model --out` writes, or JSON "
        'lines `{"index": ..., "prediction": ...}`; see ClinReview\'s docs/releases.md) and '
        "prints the `overall` and `tasks` blocks `run_model --out` writes, with the same "
        "numbers. It needs Python with numpy, rouge-score, sacrebleu and pycocotools, and "
        "ClinReview's `annotations` package on the path; no Django, no database.",
        "",
    ]
    return "\n".join(lines)
