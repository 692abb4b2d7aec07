"""A run over a benchmark made of the conformance corpus' rows, against an endpoint that replays
each row's reply, reports VLMEvalKit's accuracies to the last digit.

The expected values come from the corpus' own `vlmeval_hit` column (what VLMEvalKit's code
returned), grouped here with pandas as VLMEvalKit's `report_acc` groups them: never from our
extractor. The replies go the whole way: the loopback server, the real `openai` client, the run's
executor, the stored Prediction, the run's summary and its page.

Rows left out: the corpus records VLMEvalKit's letter for each reply *as a string*, while in
VLMEvalKit's pipeline a reply first goes through its prediction file, where "None", "N/A", "" and
the like become NaN and control characters are escaped (the corpus README, "Limits"). For those
21 rows the corpus cannot say what VLMEvalKit's pipeline scores, so they are not replayed.
"""

from __future__ import annotations

import re

import pandas as pd
from django.test import TestCase
from django.urls import reverse

from annotations.models import Item
from annotations.scoring import VLMEVAL_COMMIT
from annotations.services import runs as run_services
from tests.factories import make_benchmark, make_personas
from tests.runs.helpers import fast_passwords, make_endpoint
from tests.scoring.conformance_corpus import OPTION_COLUMNS, mcq_rows
from tests.support.fake_openai import FakeOpenAIServer, Reply, prompt_text

SPLITS = ("dev", "test", "val")
# pandas' default NA strings and what an .xlsx cell escapes: a reply like these is not the same
# string once VLMEvalKit has written and read its prediction file.
_NA_STRINGS = {
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
}  # fmt: skip
_CHANGED_BY_XLSX = re.compile(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]|_x[0-9a-fA-F]{4}_")
_ROW_ID = re.compile(r"\[(mcq-\d+)\]")


def replayable(row: dict[str, str]) -> bool:
    reply = row["prediction"]
    return reply not in _NA_STRINGS and not _CHANGED_BY_XLSX.search(reply)


def fields_of(number: int, row: dict[str, str]) -> dict[str, str]:
    """The taxonomy each replayed row gets: its reply family as the category, its template as
    the task, the number of options as the l2-category, and a split in turn."""
    return {
        "split": SPLITS[number % 3],
        "category": row["family"],
        "l2_category": f"{row['n_options']} options",
        "task": row["case"],
    }


def replay(rows: dict[str, dict[str, str]]):
    def script(request_json, attempt_no):
        row_id = _ROW_ID.search(prompt_text(request_json)).group(1)
        return Reply(text=rows[row_id]["prediction"])

    return script


def expected_report_acc(frame: pd.DataFrame) -> list[dict[str, object]]:
    """VLMEvalKit's `report_acc` from the corpus hits: rows by split, Overall, then the sorted
    l2-categories and categories."""
    rows = []
    for split in sorted(set(frame["split"])):
        in_split = frame[frame["split"] == split]
        row: dict[str, object] = {"split": split, "Overall": float(in_split["hit"].mean())}
        for group in ("l2_category", "category"):
            for ability in sorted(set(frame[group])):
                row[ability] = float(in_split[in_split[group] == ability]["hit"].mean())
        rows.append(row)
    return rows


@fast_passwords
class ReplayedCorpusRunTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.curator = make_personas()["curator"]
        corpus = [row for row in mcq_rows() if replayable(row)]
        cls.rows = {row["id"]: row for row in corpus}
        cls.benchmark = make_benchmark("corpus-replay", family="vlmeval")
        Item.objects.bulk_create(
            Item(
                benchmark=cls.benchmark,
                source_index=number,
                # The question does not take part in exact matching; the id lets the endpoint
                # find the row's reply.
                question=f"[{row['id']}] {row['question']}",
                options=[row[letter] for letter in OPTION_COLUMNS],
                answer=row["answer"],
                **fields_of(number, row),
            )
            for number, row in enumerate(corpus)
        )
        frame = pd.DataFrame([fields_of(n, row) for n, row in enumerate(corpus)])
        frame["hit"] = [int(row["vlmeval_hit"]) for row in corpus]
        cls.frame = frame
        with FakeOpenAIServer(replay(cls.rows)) as server:
            run = run_services.run_create(
                benchmark=cls.benchmark,
                endpoint=make_endpoint(server.base_url, name="replay"),
                with_image=False,
                concurrency=8,
                lenient=True,
                enqueue=False,
            )
            cls.replayed = run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
            cls.asked = len(server.requests)

    def test_every_row_was_replayed_and_read_as_vlmevalkit_read_it(self):
        self.assertEqual(len(self.rows), 748 - 21)
        self.assertEqual(self.asked, len(self.rows))
        self.assertEqual((self.replayed.status, self.replayed.failed), ("done", 0))
        predictions = self.replayed.predictions.select_related("item")
        letters = {
            _ROW_ID.search(p.item.question).group(1): (p.raw_text, p.vlmeval_letter or "Z")
            for p in predictions
        }
        expected = {
            row_id: (row["prediction"], row["vlmeval_letter"]) for row_id, row in self.rows.items()
        }
        self.assertEqual(letters, expected)

    def test_overall_and_per_category_and_per_task_accuracies_are_vlmevalkits(self):
        summary = self.replayed.summary
        frame = self.frame
        self.assertEqual(summary["overall"]["accuracy"], float(frame["hit"].mean()))
        self.assertEqual(summary["overall"]["hits"], int(frame["hit"].sum()))
        for field in ("category", "task", "l2_category", "split"):
            expected = frame.groupby(field)["hit"].mean().to_dict()
            ours = {value: score["accuracy"] for value, score in summary["by"][field].items()}
            self.assertEqual(ours, {str(k): float(v) for k, v in expected.items()}, field)

    def test_the_run_carries_vlmevalkits_own_table_to_the_last_digit(self):
        vlmeval = self.replayed.summary["vlmeval"]
        expected = expected_report_acc(self.frame)
        self.assertEqual(vlmeval["commit"], VLMEVAL_COMMIT)
        self.assertEqual(vlmeval["header"], list(expected[0]))  # VLMEvalKit's column order
        # Float for float: the same divisions (every cell here has items, so no NaN).
        self.assertEqual(vlmeval["rows"], [list(row.values()) for row in expected])

    def test_the_run_page_prints_the_table_as_vlmevalkit_prints_it(self):
        self.client.force_login(self.curator)
        response = self.client.get(reverse("run", args=[self.replayed.pk]))
        self.assertContains(response, f"<code>{VLMEVAL_COMMIT}</code>")
        html = response.content.decode()
        table = html[html.index('data-testid="vlmeval-table"') :]
        table = table[: table.index("</table>")]
        for row in expected_report_acc(self.frame):
            cells = "".join(
                f'<td class="num">{value if key == "split" else format(value, "g")}</td>'
                for key, value in row.items()
            )
            self.assertIn(cells, table)

    def test_the_lenient_score_is_kept_beside_and_only_adds_readings(self):
        predictions = list(self.replayed.predictions.all())
        self.assertTrue(all(p.lenient_hit or not p.hit for p in predictions))
        extra = [p for p in predictions if p.lenient_hit and not p.hit]
        self.assertTrue(extra)  # e.g. "答案是B": read leniently, not by VLMEvalKit
        self.assertTrue(all(p.vlmeval_letter == "" for p in extra))
        lenient = self.replayed.summary["lenient"]["overall"]
        self.assertEqual(lenient["hits"], int(self.frame["hit"].sum()) + len(extra))
        self.assertEqual(self.replayed.summary["overall"]["hits"], int(self.frame["hit"].sum()))
