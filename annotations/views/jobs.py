"""The Jobs page: background work of every kind, its state and health, and a retry for what
failed."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotations.access import CURATOR, role_required
from annotations.selectors import jobs as selectors
from annotations.services.background import background_retry
from annotations.services.errors import DomainError
from annotations.services.recovery import stale_seconds

PAGE = "jobs/list.html"


def _state(value: str) -> str:
    return value if value in selectors.STATES else ""


@require_GET
@role_required(CURATOR)
def job_list(request: HttpRequest) -> HttpResponse:
    state = _state(request.GET.get("state", ""))
    page = selectors.background_page(state=state, number=request.GET.get("page", 1))
    context = {
        "page": page,
        "state": state,
        "filters": {"state": state},
        "stale_seconds": int(stale_seconds()),
        "active": any(row.state in ("queued", "running") for row in page.object_list),
    }
    return render(request, f"{PAGE}#rows" if request.htmx else PAGE, context)


@require_POST
@role_required(CURATOR)
def job_retry(request: HttpRequest, source: str, pk: int) -> HttpResponse:
    work = selectors.background_work_get(source, pk)
    try:
        background_retry(work=work)
    except DomainError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("Sent back to the queue: a worker will take it up."))
    if source == "job" and request.POST.get("return_to") == "job":
        return redirect("job", pk=pk)
    state = _state(request.POST.get("state", ""))
    return redirect(reverse("jobs") + (f"?state={state}" if state else ""))
