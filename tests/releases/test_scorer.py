"""The standalone scorer on a release with a withheld split (its truths in the answer key), from
`run_model --out`'s JSON (or the same file downloaded from the run page or the API) and from plain
JSON lines; and what it refuses."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Item
from annotations.scoring.__main__ import main
from annotations.scoring.release import ReleaseError, load_release, score
from annotations.services.releases import release_build, release_create
from tests.factories import make_user
from tests.runs.gastric_tasks import (
    T_LABELS,
    chat_script,
    embeddings_script,
    make_task_benchmark,
)
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(settings, tmp_path):
    """A Gastric-X benchmark of every kind, run (`run_model --out`) and released with case
    GX-0 withheld as the test split (a split is decided per case). GX-0's retrieval item is
    left out first: its query is one of GX-0's reports, a withheld answer, so the release would
    be refused until the curator resolves that conflict (issue 29)."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.RELEASES_ROOT = str(tmp_path / "releases")
    made = make_task_benchmark()
    made.benchmark.label_sets = {"label": T_LABELS, "t": T_LABELS}
    made.benchmark.save()
    items = Item.objects.filter(benchmark=made.benchmark)
    items.filter(case__case_id="GX-0", kind="retrieval").delete()
    items.filter(case__case_id="GX-0").update(split="test")
    items.exclude(case__case_id="GX-0").update(split="dev")
    out = tmp_path / "out.json"
    with FakeOpenAIServer(chat_script(made), embeddings=embeddings_script(made)) as server:
        call_command(
            "run_model", made.benchmark.name, "--base-url", server.base_url,
            "--model", "fake-model", "--out", str(out), "--seed", "5",
            stdout=StringIO(), verbosity=0,
        )  # fmt: skip
    release = release_create(
        benchmark=made.benchmark, name="GxScored", version="1", include_all=True,
        withhold_split="test",
    )  # fmt: skip
    release = release_build(release=release)
    assert release.status == "published", release.error
    return Path(release.path), out, json.loads(out.read_text())


def test_a_withheld_split_is_scored_from_the_answer_key_as_the_run_scored_it(scored, capsys):
    folder, out, document = scored
    kinds = {row["kind"] for row in document["predictions"] if "kind" in row}
    assert kinds == {"label", "open", "box", "retrieval"}
    withheld = [i for i in json.loads((folder / "GxScored.json").read_text())["items"]
                if i.get("withheld")]  # fmt: skip
    # Every kind of the withheld case is scored from the answer key; retrieval from the public
    # cases (a withheld case's retrieval query would publish its report).
    assert {i.get("kind", "mcq") for i in withheld} == {"mcq", "label", "open", "box"}

    assert main([str(folder), str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    for block in ("overall", "tasks", "task_details"):
        assert printed[block] == document[block], block


def test_json_lines_score_alike_with_the_seed_given(scored, tmp_path, capsys):
    folder, _out, document = scored
    lines = tmp_path / "predictions.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in document["predictions"]))

    assert main([str(folder), str(lines), "--seed", str(document["seed"])]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["tasks"] == document["tasks"]
    assert printed["overall"] == document["overall"]
    # Another seed draws other intervals, the same values.
    assert main([str(folder), str(lines), "--seed", "99"]) == 0
    other = json.loads(capsys.readouterr().out)
    report = ("report_generation", "rouge_l")
    assert (
        other["tasks"][report[0]][report[1]]["value"]
        == (document["tasks"][report[0]][report[1]]["value"])
    )


def test_a_prediction_for_no_item_of_the_release_is_refused(scored, tmp_path, capsys):
    folder, _out, _document = scored
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"index": 987654, "prediction": "A"}\n')

    assert main([str(folder), str(lines)]) == 2
    assert "987654" in capsys.readouterr().err
    with pytest.raises(ReleaseError, match="987654"):
        score(load_release(folder), [{"index": 987654, "prediction": "A"}])


def test_a_run_made_in_the_app_downloads_the_file_the_scorer_reads(
    scored, client, tmp_path, capsys
):
    # The run page's link and the API serve what `run_model --out` wrote: a run started from
    # the browser is reproduced outside the app as the command's run is.
    folder, _out, document = scored
    curator = make_user("carla", "curator")
    client.force_login(curator)
    page = client.get(reverse("run", args=[document["run"]])).content.decode()
    href = re.search(r'href="([^"]+)" download data-testid="run-results"', page).group(1)
    response = client.get(href)
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="run-{document["run"]}-results.json"'
    )
    downloaded = json.loads(response.content)
    assert downloaded == document
    api = APIClient()
    api.force_authenticate(curator)
    assert api.get(reverse("api-run-results", args=[document["run"]])).json() == document

    saved = tmp_path / "downloaded.json"
    saved.write_bytes(response.content)
    assert main([str(folder), str(saved)]) == 0
    printed = json.loads(capsys.readouterr().out)
    for block in ("overall", "tasks", "task_details"):
        assert printed[block] == document[block], block
    assert {row["kind"] for row in downloaded["predictions"] if "kind" in row} == {
        "label", "open", "box", "retrieval"
    }  # fmt: skip
    # Runs are the curators': a reviewer gets neither the page nor the file.
    client.force_login(make_user("rita", "reviewer"))
    assert client.get(href).status_code == 403
