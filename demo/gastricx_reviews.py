"""Review activity on the Gastric-X demo, so each task's review can be tried after `make run`:
the first case's diagnostic report is edited differently by the two demo reviewers (the
adjudicator reads both edits as word diffs) and its T stage is corrected by one of them only.
The last case's items are accepted by both, so a release of the demo holds a file per task.

The reviews go through the review service, exactly as if the reviewers had clicked.
"""

from __future__ import annotations

from annotations.models import Benchmark, Item, ItemKind, Verdict
from annotations.services.review import review_submit


def demo_gastricx_reviews_seed(*, benchmark: Benchmark, first, second) -> int:
    """Two Gastric-X disputes between `first` and `second`, and the last case agreed; returns
    the reviews given."""
    case = benchmark.cases.order_by("case_id").first()
    if case is None:
        return 0
    given = _agree_last_case(benchmark, case, first, second)
    items = Item.objects.filter(case=case)
    report = items.filter(kind=ItemKind.OPEN, category="diagnostic").first()
    stage = items.filter(kind=ItemKind.LABEL, category="t").first()
    if report is not None:
        sentences = report.reference.split(". ")
        shorter = ". ".join(sentences[:-1]).rstrip(".") + "." if len(sentences) > 1 else ""
        edits = (
            report.reference + " Staging laparoscopy recommended before treatment.",
            shorter or report.reference + " No distant metastasis.",
        )
        for reviewer, text in zip((first, second), edits, strict=True):
            review_submit(
                item=report,
                reviewer=reviewer,
                verdict=Verdict.EDIT,
                version=report.version,
                content={"reference": text},
            )
            given += 1
    if stage is not None:
        labels = benchmark.label_sets.get("t", [])
        other = next((label for label in ("T4a", "T3") if label != stage.answer), labels[0])
        review_submit(item=stage, reviewer=first, verdict=Verdict.ACCEPT, version=stage.version)
        review_submit(
            item=stage,
            reviewer=second,
            verdict=Verdict.EDIT,
            version=stage.version,
            content={"answer": other},
        )
        given += 2
    return given


def _agree_last_case(benchmark: Benchmark, first_case, first, second) -> int:
    last = benchmark.cases.order_by("case_id").last()
    if last is None or last.pk == first_case.pk:
        return 0
    given = 0
    for item in Item.objects.filter(case=last).order_by("source_index"):
        for reviewer in (first, second):
            review_submit(
                item=item, reviewer=reviewer, verdict=Verdict.ACCEPT, version=item.version
            )
            given += 1
    return given
