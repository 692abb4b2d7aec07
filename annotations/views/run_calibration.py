"""A run's downloads (scores and predictions as JSON; calibration and cliffs as CSV), the twins
behind a cliff, two runs compared."""

from __future__ import annotations

import csv

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotations.access import CURATOR, role_required
from annotations.selectors import calibration as calibration_selectors
from annotations.selectors import runs as run_selectors
from annotations.selectors import visibility
from annotations.services.runs.results import run_results


def _run(request: HttpRequest, pk: int):
    run = visibility.get_run_for_user_or_404(request.user, pk, run_selectors.run_list())
    # Hits give the gold answers away.
    visibility.check_gold_visible(request.user, run.benchmark_id)
    return run


def _csv(name: str, header: list[str], rows: list[list], comment: str = "") -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    if comment:
        response.write(f"# {comment}\r\n")
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows(rows)
    return response


@require_GET
@role_required(CURATOR)
def run_results_json(request: HttpRequest, pk: int) -> HttpResponse:
    """What `run_model --out` writes: `python -m annotations.scoring` scores it outside the app."""
    run = _run(request, pk)
    response = JsonResponse(
        run_results(run), json_dumps_params={"indent": 2, "ensure_ascii": False}
    )
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-results.json"'
    return response


@require_GET
@role_required(CURATOR)
def run_calibration_csv(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    return _csv(
        f"run-{run.pk}-calibration.csv",
        calibration_selectors.CALIBRATION_CSV_HEADER,
        calibration_selectors.calibration_csv_rows(run),
    )


@require_GET
@role_required(CURATOR)
def run_cliffs_csv(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    # The rule's thresholds travel with the rows: a reader knows what was called a cliff.
    return _csv(
        f"run-{run.pk}-cliffs.csv",
        calibration_selectors.CLIFF_CSV_HEADER,
        calibration_selectors.cliffs_csv_rows(run),
        comment="cliff rule: " + calibration_selectors.cliff_rule_line(run),
    )


@require_GET
@role_required(CURATOR)
def run_cliff_items(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    kind = request.GET.get("type", "")
    modality = request.GET.get("modality", "")
    triples = calibration_selectors.cliff_triples(run, degradation_type=kind, modality=modality)
    cliffs = calibration_selectors.run_cliffs(run)
    row = next(
        (
            r
            for r in (cliffs.rows if cliffs else [])
            if r["degradation_type"] == kind and (r["modality"] or "") == modality
        ),
        None,
    )
    context = {"run": run, "kind": kind, "modality": modality, "triples": triples, "row": row}
    return render(request, "runs/cliff_items.html", context)


@require_GET
@role_required(CURATOR)
def run_compare(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run(request, pk)
    others = [
        other
        for other in run_selectors.run_list(benchmark=run.benchmark)
        if other.pk != run.pk and (other.summary or {}).get("overall")
    ]
    chosen = request.GET.get("with", "")
    other = next((o for o in others if str(o.pk) == chosen), None)
    context = {
        "run": run,
        "others": others,
        "other": other,
        "comparison": calibration_selectors.compare_runs(run, other) if other else None,
    }
    return render(request, "runs/compare.html", context)
