"""A degraded benchmark with twins run through the real `openai` client against the fake server
with log-probabilities: every confidence, calibration figure, shift and cliff is checked against
values computed here, independently (plain sums; statsmodels' McNemar), then on the run page."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict

import pytest
from django.test import TestCase, override_settings
from django.urls import reverse
from statsmodels.stats.contingency_tables import mcnemar

from annotations.models import Prediction, Run
from annotations.services import runs as run_services
from tests.factories import make_benchmark, make_item, make_personas
from tests.runs.helpers import fast_passwords, make_endpoint
from tests.support.fake_openai import FakeOpenAIServer, Reply, prompt_text

GOLD = "ABCD"
CLEANS = range(1, 25)
# index offset of each degraded twin: (type, severity)
TWINS = {
    100: ("gaussian_blur", "mild"),
    200: ("gaussian_blur", "severe"),
    300: ("gaussian_noise", "mild"),
    400: ("gaussian_noise", "severe"),
}


def _plan(i: int, offset: int) -> tuple[bool | None, float]:
    """(right?, confidence) of the model on clean item i (offset 0) or one of its twins; None:
    a reply with no letter at all."""
    if offset == 0:
        return i not in (23, 24), 0.9 if i not in (23, 24) else 0.6
    if offset == 100:
        return i <= 21, 0.85
    if offset == 200:
        return i <= 6, 0.8  # accuracy collapses, confidence barely moves: a cliff
    if offset == 300:
        return i <= 16, 0.8
    if i == 20:
        return None, 0.0
    return i <= 12, 0.75


def _gold(i: int) -> str:
    return GOLD[i % 4]


def _other(letter: str) -> str:
    return GOLD[(GOLD.index(letter) + 1) % 4]


def _model(request_json, attempt_no):
    index = int(re.search(r"frame (\d+)\?", prompt_text(request_json)).group(1))
    i, offset = index % 100, index - index % 100
    right, p = _plan(i, offset)
    if right is None:
        return Reply(text="Unclear.")
    gold = _gold(i)
    said = gold if right else _other(gold)
    unsaid = _other(gold) if right else gold
    text = f"The answer is {said}." if i % 3 == 0 else said
    return Reply(text=text, letter_probs={said: p, unsaid: round(1 - p, 10)})


def _expected_records() -> list[dict]:
    records = []
    for i in CLEANS:
        for offset in (0, *TWINS):
            right, p = _plan(i, offset)
            kind, severity = TWINS.get(offset, ("", "clean"))
            records.append(
                {
                    "index": offset + i,
                    "clean": i,
                    "hit": bool(right),
                    "confidence": None if right is None else p,
                    "severity": severity,
                    "type": kind,
                    "modality": "CT" if i <= 12 else "MRI",
                    "capability": "perception" if i % 2 else "reasoning",
                }
            )
    return records


def _ece(rows: list[dict]) -> float:
    bins: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        c = row["confidence"]
        b = 0
        while c > (b + 1) / 15:  # (lo, hi]
            b += 1
        bins[b].append(row)
    total = len(rows)
    return sum(
        len(members)
        / total
        * abs(
            sum(r["hit"] for r in members) / len(members)
            - sum(r["confidence"] for r in members) / len(members)
        )
        for members in bins.values()
    )


def _figures(rows: list[dict]) -> dict:
    n = len(rows)
    accuracy = sum(r["hit"] for r in rows) / n
    mean_confidence = sum(r["confidence"] for r in rows) / n
    return {
        "n": n,
        "ece": _ece(rows),
        "brier": sum((r["confidence"] - r["hit"]) ** 2 for r in rows) / n,
        "mean_confidence": mean_confidence,
        "accuracy": accuracy,
        "gap": mean_confidence - accuracy,
    }


def _assert_group(group: dict, expected: dict) -> None:
    for name, value in expected.items():
        assert group[name] == pytest.approx(value), name
        if name != "n":
            low, high = group["intervals"][name]
            assert low <= group[name] + 1e-12 and group[name] <= high + 1e-12, name


@fast_passwords
@override_settings(CLIFF_RULE={"min_twins": 12})
class CalibrationEndToEndTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("medqdeg-e2e", family="medqdeg")
        cleans = {}
        for i in CLEANS:
            common = {
                "answer": _gold(i),
                "modality": "CT" if i <= 12 else "MRI",
                "source": "SLAKE" if i % 3 else "OmniMedVQA",
                "extra": {"capability": "perception" if i % 2 else "reasoning"},
            }
            cleans[i] = make_item(cls.benchmark, index=i, **common)
            for offset, (kind, severity) in TWINS.items():
                make_item(
                    cls.benchmark,
                    index=offset + i,
                    clean_twin=cleans[i],
                    degradation_type=kind,
                    degradation_severity=severity,
                    question=f"Which finding is shown in frame {offset + i}?",
                    **common,
                )

    def run_model(self, **server) -> Run:
        with FakeOpenAIServer(_model, **server) as fake:
            run = run_services.run_create(
                benchmark=self.benchmark, endpoint=make_endpoint(fake.base_url), enqueue=False
            )
            return run_services.run_execute(run_id=run.pk, poll_seconds=0.05)

    def test_every_figure_matches_an_independent_computation(self):
        run = self.run_model()
        expected = {r["index"]: r for r in _expected_records()}
        stored = {
            p.item.source_index: p
            for p in Prediction.objects.filter(run=run).select_related("item")
        }
        assert len(stored) == 120
        for index, record in expected.items():
            assert stored[index].hit is record["hit"], index
            if record["confidence"] is None:
                assert stored[index].confidence is None and stored[index].vlmeval_letter == ""
            else:
                assert stored[index].confidence == pytest.approx(record["confidence"]), index
        assert run.logprobs_refused is False

        calibration = run.summary["calibration"]
        rated = [r for r in expected.values() if r["confidence"] is not None]
        assert (calibration["n"], calibration["rated"]) == (120, 119)
        _assert_group(calibration["overall"], _figures(rated))
        for field, key in (
            ("severity", "severity"),
            ("degradation_type", "type"),
            ("modality", "modality"),
            ("capability", "capability"),
        ):
            values = {r[key] for r in rated if r[key]}
            assert set(calibration["by"][field]) == values, field
            for value in values:
                rows = [r for r in rated if r[key] == value]
                _assert_group(calibration["by"][field][value], _figures(rows))

        # Calibration shift: families are the clean items with a confidence (all 24), each
        # level the answers of that level with a confidence.
        shift = calibration["shift"]
        assert shift["families"] == 24
        level_figures = {
            level: _figures([r for r in rated if r["severity"] == level])
            for level in ("clean", "mild", "severe")
        }
        for level, figures in level_figures.items():
            assert shift["levels"][level]["n"] == figures["n"]
            for name in ("ece", "brier", "mean_confidence", "accuracy", "gap"):
                assert shift["levels"][level]["value"][name] == pytest.approx(figures[name])
        for step, (a, b) in {
            "clean>mild": ("clean", "mild"),
            "mild>severe": ("mild", "severe"),
        }.items():
            for name in ("ece", "accuracy", "gap"):
                change = level_figures[b][name] - level_figures[a][name]
                assert shift["steps"][step]["value"][name] == pytest.approx(change)
                low, high = shift["steps"][step]["intervals"][name]
                assert low - 1e-12 <= change <= high + 1e-12

        # Cliffs on (clean, mild, severe) triples, McNemar from statsmodels.
        cliffs = run.summary["cliffs"]
        assert cliffs["rule"] == {"ratio": 2.0, "min_drop": 0.1, "alpha": 0.05, "min_twins": 12}
        got = {(r["degradation_type"], r["modality"]): r for r in cliffs["rows"]}
        cells = [(k, m) for k in ("gaussian_blur", "gaussian_noise") for m in (None, "CT", "MRI")]
        assert set(got) == set(cells)
        for kind, modality in cells:
            offsets = [o for o, (t, _s) in TWINS.items() if t == kind]
            members = [i for i in CLEANS if modality is None or expected[i]["modality"] == modality]
            clean = [expected[i]["hit"] for i in members]
            mild = [expected[offsets[0] + i]["hit"] for i in members]
            severe = [expected[offsets[1] + i]["hit"] for i in members]
            row = got[(kind, modality)]
            n = len(members)
            assert row["n"] == n
            assert row["accuracy_clean"] == pytest.approx(sum(clean) / n)
            assert row["accuracy_mild"] == pytest.approx(sum(mild) / n)
            assert row["accuracy_severe"] == pytest.approx(sum(severe) / n)
            drop_mild = (sum(clean) - sum(mild)) / n
            drop_severe = (sum(mild) - sum(severe)) / n
            assert row["drop_mild"] == pytest.approx(drop_mild)
            assert row["drop_severe"] == pytest.approx(drop_severe)
            for before, after, key in ((clean, mild, "p_mild"), (mild, severe, "p_severe")):
                b = sum(1 for x, y in zip(before, after, strict=True) if x and not y)
                c = sum(1 for x, y in zip(before, after, strict=True) if y and not x)
                table = [[0, b], [c, 0]]
                assert row[key] == pytest.approx(mcnemar(table, exact=True).pvalue)
            cliff = drop_severe >= 2 * drop_mild and drop_severe >= 0.1 and row["p_severe"] < 0.05
            assert row["cliff"] is cliff
        assert {k for k, r in got.items() if r["cliff"]} == {
            ("gaussian_blur", None),
            ("gaussian_blur", "CT"),
            ("gaussian_blur", "MRI"),
        }
        drops = [r["drop_severe"] for r in cliffs["rows"]]
        assert drops == sorted(drops, reverse=True)

        # Skill-specific robustness: each capability's paired drop per type and severity.
        for row in cliffs["capability"]:
            offset = next(
                o for o, t in TWINS.items() if t == (row["degradation_type"], row["severity"])
            )
            members = [i for i in CLEANS if expected[i]["capability"] == row["capability"]]
            clean = sum(expected[i]["hit"] for i in members) / len(members)
            degraded = sum(expected[offset + i]["hit"] for i in members) / len(members)
            assert (row["accuracy_clean"], row["accuracy_degraded"]) == pytest.approx(
                (clean, degraded)
            )
        assert len(cliffs["capability"]) == 8

        self.check_run_page(run, calibration, cliffs)

    def check_run_page(self, run: Run, calibration: dict, cliffs: dict) -> None:
        self.client.force_login(self.people["curator"])
        page = self.client.get(reverse("run", args=[run.pk]))
        html = page.content.decode()
        assert page.status_code == 200
        assert html.count('class="reliability-figure"') == 3
        assert html.count('data-curve="clean"') == 3  # clean alone, then beside mild and severe
        assert 'data-testid="cliff-table"' in html
        assert html.count('data-cliff="true"') == 3
        # The rule's drop is a difference of accuracies: percentage points, not a percentage.
        assert "at least 2.0× the mild step, at least 10 pp, with p &lt; 0.05" in html
        # The CSV links the page renders.
        calibration_href = re.search(r'href="([^"]+)" download data-testid="calibration-csv"', html)
        rows = list(
            csv.reader(io.StringIO(self.client.get(calibration_href.group(1)).content.decode()))
        )
        overall = dict(zip(rows[0], rows[1], strict=True))
        assert overall["breakdown"] == "overall"
        assert float(overall["ece"]) == pytest.approx(calibration["overall"]["ece"])
        assert float(overall["brier_low"]) == pytest.approx(
            calibration["overall"]["intervals"]["brier"][0]
        )
        cliffs_href = re.search(r'href="([^"]+)" download data-testid="cliffs-csv"', html)
        lines = self.client.get(cliffs_href.group(1)).content.decode().splitlines()
        assert lines[0] == "# cliff rule: ratio=2.0; min_drop=0.1; alpha=0.05; min_twins=12"
        table = list(csv.DictReader(lines[1:]))
        assert [r["cliff"] for r in table] == [str(r["cliff"]) for r in cliffs["rows"]]
        assert float(table[0]["drop_severe"]) == pytest.approx(cliffs["rows"][0]["drop_severe"])
        # A cliff's twins, one click away: the link on its row.
        link = re.search(r'href="([^"]+type=gaussian_blur&amp;modality=CT)" data-twins-link', html)
        twins = self.client.get(link.group(1).replace("&amp;", "&")).content.decode()
        assert twins.count('data-testid="triple"') == 12
        assert twins.count("data-confidence") == 36
        # The leaderboard, linked from the run page, gains ECE, over-confidence at severe, cliffs.
        board_href = re.search(r'<a href="([^"]+)">[^<]*· leaderboard</a>', html).group(1)
        board = self.client.get(board_href).content.decode()
        ece = re.search(r'data-col="ece">([^<]+)<', board).group(1)
        assert float(ece) == pytest.approx(calibration["overall"]["ece"], abs=5e-4)
        gap = calibration["by"]["severity"]["severe"]["gap"]
        assert f"+{100 * gap:.1f} pp" in re.search(r'data-col="severe-gap">([^<]+)<', board).group(
            1
        )
        assert re.search(r'data-col="cliffs"><a [^>]+>(\d+)</a>', board).group(1) == "3"

    def test_two_runs_compared_side_by_side(self):
        model = self.run_model()
        baseline = run_services.run_execute(
            run_id=run_services.run_create(
                benchmark=self.benchmark,
                endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
                enqueue=False,
            ).pk
        )
        self.client.force_login(self.people["curator"])
        html = self.client.get(reverse("run", args=[model.pk])).content.decode()
        compare_href = re.search(r'href="([^"]+)">Compare with another run', html).group(1)
        form = self.client.get(compare_href).content.decode()
        # The form's own select offers the baseline; choosing it is what the user does.
        assert f'<option value="{baseline.pk}"' in form
        page = self.client.get(compare_href, {"with": baseline.pk}).content.decode()
        assert page.count('class="reliability-figure"') == 3
        assert page.count('data-curve="a"') == 3 and 'data-curve="b"' not in page  # no confidence
        rows = re.findall(r'<tr data-type="([^"]+)" data-modality="([^"]*)">', page)
        assert len(rows) == len(
            {(r["degradation_type"], r["modality"] or "") for run in (model, baseline)
             for r in run.summary["cliffs"]["rows"]}
        )  # fmt: skip
        assert rows[0] == ("gaussian_blur", "MRI")  # the largest severe step of either run

    def test_an_endpoint_refusing_logprobs_is_asked_without_and_the_run_says_so(self):
        run = self.run_model(logprobs="refused")
        assert run.logprobs_refused is True
        assert run.completed == 120 and run.failed == 0
        assert not Prediction.objects.filter(run=run, confidence__isnull=False).exists()
        assert run.summary["calibration"] is None
        # Cliffs need no confidence.
        assert any(r["cliff"] for r in run.summary["cliffs"]["rows"])
        self.client.force_login(self.people["curator"])
        html = self.client.get(reverse("run", args=[run.pk])).content.decode()
        assert 'data-testid="logprobs-refused"' in html

    def test_run_model_out_writes_confidence_calibration_and_cliffs(self):
        import tempfile
        from pathlib import Path

        from django.core.management import call_command

        with FakeOpenAIServer(_model) as fake, tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "out.json"
            call_command(
                "run_model", "medqdeg-e2e", "--base-url", fake.base_url, "--model", "m",
                "--out", str(path), stdout=io.StringIO(), stderr=io.StringIO(),
            )  # fmt: skip
            document = json.loads(path.read_text())
        expected = {r["index"]: r for r in _expected_records()}
        for row in document["predictions"]:
            want = expected[row["index"]]["confidence"]
            assert row["confidence"] == (None if want is None else pytest.approx(want))
        overall = document["calibration"]["overall"]
        rated = [r for r in expected.values() if r["confidence"] is not None]
        for name, value in _figures(rated).items():
            assert overall[name] == pytest.approx(value)
        assert set(document["calibration"]["by"]) == {
            "severity", "degradation_type", "modality", "source", "capability"
        }  # fmt: skip
        row = document["cliffs"]["rows"][0]
        assert set(row) == {
            "degradation_type", "modality", "n", "accuracy_clean", "accuracy_mild",
            "accuracy_severe", "drop_mild", "drop_severe", "p_mild", "p_severe", "cliff",
        }  # fmt: skip
        assert document["cliffs"]["rule"]["min_twins"] == 12
