"""Agreement statistics per benchmark and per taxonomy value, with inline SVG bar charts
(`annotations.charts.agreement_chart`)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotations.access import ADJUDICATOR, CURATOR, role_required
from annotations.charts import agreement_chart
from annotations.models import Benchmark
from annotations.selectors import visibility
from annotations.services.agreement import MIN_UNITS, benchmark_agreement, finite


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
    charts = [(_("All co-reviewed items"), agreement_chart({benchmark.name: report.overall}))]
    charts += [(field, agreement_chart(values)) for field, values in report.by_field.items()]
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
