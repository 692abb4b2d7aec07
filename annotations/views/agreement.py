"""Agreement statistics per benchmark and per taxonomy value, with inline SVG bar charts."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotations.access import ADJUDICATOR, CURATOR, role_required
from annotations.models import Benchmark
from annotations.selectors import visibility
from annotations.services.agreement import (
    MIN_UNITS,
    AgreementStats,
    benchmark_agreement,
    finite,
)

ROW, LABEL_W, BAR_W = 30, 190, 380


def chart(groups: dict[str, AgreementStats]) -> dict:
    """Bar geometry: percent agreement as a bar, Krippendorff's alpha as a tick on the same axis."""
    rows = []
    for position, (label, stats) in enumerate(groups.items()):
        percent, alpha = finite(stats.percent), finite(stats.alpha)
        rows.append(
            {
                "label": label,
                "y": 24 + position * ROW,
                "bar": round((percent or 0.0) * BAR_W, 1),
                "alpha": alpha,
                "alpha_x": None if alpha is None else round(LABEL_W + max(alpha, 0.0) * BAR_W, 1),
                "percent": percent,
                "n": stats.n,
                "warning": stats.warning,
            }
        )
    return {
        "rows": rows,
        "height": 24 + len(rows) * ROW + 8,
        "width": LABEL_W + BAR_W + 120,
        "label_w": LABEL_W,
        "bar_w": BAR_W,
        "ticks": [{"x": LABEL_W + f * BAR_W, "label": f"{f:.2g}"} for f in (0, 0.25, 0.5, 0.75, 1)],
    }


@require_GET
@role_required(CURATOR, ADJUDICATOR)
def agreement_index(request: HttpRequest) -> HttpResponse:
    benchmarks = visibility.in_scope(Benchmark.objects.all(), request.user, benchmark_path="pk")
    benchmarks = benchmarks.order_by("name")
    return render(request, "review/agreement_index.html", {"benchmarks": benchmarks})


@require_GET
@role_required(CURATOR, ADJUDICATOR)
def agreement(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    visibility.check_gold_visible(request.user, benchmark.pk)
    report = benchmark_agreement(benchmark=benchmark, viewer=request.user)
    charts = [(_("All co-reviewed items"), chart({benchmark.name: report.overall}))]
    charts += [(field, chart(values)) for field, values in report.by_field.items()]
    context = {
        "benchmark": benchmark,
        "report": report,
        "charts": charts,
        "min_units": MIN_UNITS,
        "overall": {
            "percent": finite(report.overall.percent),
            "alpha": finite(report.overall.alpha),
        },
        "pairs": [(pair, finite(pair.kappa), finite(pair.percent)) for pair in report.pairs],
    }
    return render(request, "review/agreement.html", context)
