"""A benchmark's settings page (curators): the settings every run and release reads, their
history, and the one form that changes them through `benchmark_settings_change`."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from annotations.access import CURATOR, role_required
from annotations.selectors import visibility
from annotations.selectors.benchmark_settings import benchmark_revisions
from annotations.services.benchmark_settings import SettingsRefused, benchmark_settings_change
from annotations.services.errors import ConflictError, DomainError
from annotations.settings_form import BenchmarkSettingsForm


@role_required(CURATOR)
def benchmark_settings(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    form = BenchmarkSettingsForm.for_benchmark(benchmark)
    status, conflict, refused_items = 200, False, []
    if request.method == "POST":
        form = BenchmarkSettingsForm(request.POST)
        status = 400
        if form.is_valid():
            try:
                revisions = benchmark_settings_change(
                    benchmark,
                    request.user,
                    form.changes(),
                    form.cleaned_data["reason"],
                    form.cleaned_data["version"],
                )
            except ConflictError as error:
                form.add_error(None, str(error))
                status, conflict = 409, True
            except SettingsRefused as error:
                form.add_error(None, str(error))
                refused_items = error.items
            except DomainError as error:
                form.add_error(None, str(error))
            else:
                if revisions:
                    messages.success(
                        request,
                        _("Settings saved as version %(version)d.")
                        % {"version": benchmark.settings_version},
                    )
                else:
                    messages.info(request, _("Nothing changed."))
                return redirect("benchmark-settings", name=benchmark.name)
    context = {
        "benchmark": benchmark,
        "form": form,
        "conflict": conflict,
        "refused_items": refused_items[:10],
        "revisions": benchmark_revisions(benchmark),
    }
    return render(request, "annotations/benchmark_settings.html", context, status=status)
