"""Importing a benchmark from the browser, and following a background job's progress."""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_GET, require_http_methods

from annotations.access import CURATOR, role_required
from annotations.forms import ImportForm
from annotations.labels import import_problem, import_warning_label
from annotations.models import Job
from annotations.selectors.jobs import job_chunks, job_retryable
from annotations.services.errors import DomainError
from annotations.services.import_jobs import (
    StoredUpload,
    import_start,
    upload_discard,
    upload_store,
)
from annotations.services.imports import ImportFailed

SESSION_KEY = "import_upload"


def _kept(request: HttpRequest) -> StoredUpload | None:
    """The file this user chose in an earlier, refused submission (kept on the server)."""
    data = request.session.get(SESSION_KEY)
    if not data or request.POST.get("kept") != data.get("token"):
        return None
    stored = StoredUpload(**data)
    return stored if stored.exists() else None


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def benchmark_import(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        initial = {"family": request.GET.get("family", "")}
        context = {"form": ImportForm(initial=initial), "limits": _limits(), "kept": None}
        return render(request, "annotations/import.html", context)
    upload = request.FILES.get("file")
    # Known once the body is parsed: the upload handler stopped reading at the limit.
    refused = getattr(request, "upload_refused", False)
    kept = _kept(request)
    upload = None if refused else upload
    if upload is not None and upload.size <= settings.MAX_UPLOAD_BYTES:
        # A newly chosen file replaces the kept one, and is itself kept if the form is refused.
        if kept is not None:
            upload_discard(stored=kept)
        kept = upload_store(upload=upload)
        request.session[SESSION_KEY] = asdict(kept)
    form = ImportForm(request.POST, refused=refused, kept=kept)
    refusal = None
    if form.is_valid():
        try:
            job = import_start(
                stored=kept,
                family=form.cleaned_data["family"],
                name=form.cleaned_data["name"],
                user=request.user,
            )
        except ImportFailed as error:
            # The file itself is wrong: it is not kept, its problems are listed.
            refusal = {
                "name": kept.name,
                "problems": [
                    import_problem(asdict(p), file_name=kept.name) for p in error.problems
                ],
            }
            upload_discard(stored=kept)
            request.session.pop(SESSION_KEY, None)
            kept = None
        except DomainError as error:
            form.add_error("name" if error.code == "name_taken" else "file", str(error))
        else:
            request.session.pop(SESSION_KEY, None)
            return redirect("job", pk=job.pk)
    context = {"form": form, "limits": _limits(), "kept": kept, "refusal": refusal}
    return render(request, "annotations/import.html", context)


def _limits() -> dict[str, str]:
    return {
        "upload": filesizeformat(settings.MAX_UPLOAD_BYTES),
        "cell": filesizeformat(settings.IMPORT_MAX_CELL_BYTES),
        "pixels": f"{settings.IMPORT_MAX_IMAGE_PIXELS / 1e6:g}",
    }


@require_GET
@role_required(CURATOR)
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=pk)
    template = "annotations/job.html#progress" if request.htmx else "annotations/job.html"
    # Looked up here: in a template, `result.items` of a dict without that key is dict.items.
    item_count = (job.result or {}).get("items", 0) if isinstance(job.result, dict) else 0
    result = job.result if isinstance(job.result, dict) else {}
    context = {
        "job": job,
        "problems": [
            import_problem(problem, file_name=(job.params or {}).get("file_name", ""))
            for problem in result.get("problems") or []
        ],
        "problems_total": result.get("problems_total") or len(result.get("problems") or []),
        "warnings": _warnings(job),
        "item_count": item_count,
        "chunks": job_chunks(job),
        "retryable": job_retryable(job),
    }
    return render(request, template, context)


def _warnings(job: Job) -> dict:
    """The job's import warnings in the reader's language: kinds with counts, then rows."""
    result = job.result or {}
    counts = result.get("warning_counts") or {}
    listed = [
        {**warning, "label": import_warning_label(warning.get("code", ""))}
        for warning in result.get("warnings") or []
    ]
    return {
        "kinds": [(import_warning_label(code), count) for code, count in counts.items()],
        "listed": listed,
        "total": result.get("warnings_total", 0),
        "unlisted": max(0, result.get("warnings_total", 0) - len(listed)),
    }
