"""A pool's hub actions: mark a benchmark as a pool, draw a benchmark from it, top one up."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotations.access import CURATOR, role_required
from annotations.forms import DrawForm
from annotations.selectors import draws as draw_selectors
from annotations.selectors import visibility
from annotations.services.draw import DrawRequest, benchmark_draw, benchmark_top_up, pool_mark
from annotations.services.errors import DomainError
from annotations.views.benchmarks import hub_page  # the hub renders a refused draw


@require_POST
@role_required(CURATOR)
def pool_set(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    try:
        pool_mark(benchmark=benchmark, is_pool=request.POST.get("is_pool") == "1")
    except DomainError as error:
        messages.error(request, str(error))
    return redirect("benchmark", name=benchmark.name)


@require_POST
@role_required(CURATOR)
def pool_draw(request: HttpRequest, name: str) -> HttpResponse:
    pool = visibility.get_benchmark_for_user_or_404(request.user, name)
    summary = draw_selectors.pool_summary(pool, visibility.benchmarks_visible_to(request.user))
    if summary is None:
        messages.error(request, _("%(name)s is not a pool.") % {"name": pool.name})
        return redirect("benchmark", name=pool.name)
    form = DrawForm.for_pool(summary, request.POST, request.FILES)
    if form.is_valid():
        data = form.cleaned_data
        per = [f"{','.join(data['fields'])}={data['per_stratum']}"] if data["fields"] else []
        try:
            record = benchmark_draw(
                pool=pool,
                request=DrawRequest(
                    name=data["name"],
                    seed=data["seed"],
                    per=per if not data["quota_csv"] else [],
                    quota_csv=data["quota_csv"],
                    balance_answers=data["balance_answers"],
                    exclude_near_duplicates=data["exclude_near_duplicates"],
                    exclude_images_of=data["exclude_images_of"],
                ),
                user=request.user,
            )
        except DomainError as error:
            form.add_error(None, str(error))
        else:
            drawn = record.report["rounds"][-1]["drawn"]
            messages.success(
                request,
                _("%(count)d items drawn into %(name)s.") % {"count": drawn, "name": data["name"]},
            )
            return redirect("benchmark", name=data["name"])
    return hub_page(request, pool, draw_form=form, status=400)


@require_POST
@role_required(CURATOR)
def draw_top_up(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    try:
        report = benchmark_top_up(benchmark=benchmark, user=request.user)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("%(count)d replacements drawn.") % {"count": report["drawn"]})
    return redirect("benchmark", name=benchmark.name)
