"""Importing a benchmark from the browser, and following a background job's progress."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from django import forms
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods

from annotations.access import CURATOR, role_required
from annotations.labels import import_warning_label
from annotations.models import Benchmark, Job
from annotations.selectors.jobs import job_chunks, job_retryable
from annotations.services.jobs import job_create
from annotations.tasks.imports import benchmark_import_task


class ImportForm(forms.Form):
    name = forms.SlugField(label=_("Benchmark name"), max_length=100)
    family = forms.ChoiceField(
        label=_("Format"),
        choices=[
            ("endobench", "EndoBench TSV"),
            ("medqdeg", "MedQ-DEG TSV"),
            ("vlmeval", _("VLMEvalKit multiple-choice TSV")),
        ],
    )
    file = forms.FileField(label=_("File"))

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Benchmark.objects.filter(name=name).exists():
            raise forms.ValidationError(_("A benchmark with this name already exists."))
        return name

    def __init__(self, *args, refused: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.refused = refused

    def clean_file(self):
        upload = self.cleaned_data.get("file")
        if self.refused or (upload is not None and upload.size > settings.MAX_UPLOAD_BYTES):
            raise forms.ValidationError(too_large_message())
        return upload

    def full_clean(self) -> None:
        super().full_clean()
        if self.refused and self.is_bound:
            # The handler stopped reading at the limit, so the file never arrived.
            self.errors["file"] = self.error_class([too_large_message()])


def too_large_message() -> str:
    return _("The file is larger than the upload limit of %(limit)s; nothing was read past it.") % {
        "limit": filesizeformat(settings.MAX_UPLOAD_BYTES)
    }


def _save_upload(upload) -> Path:
    # A folder per upload, named by a random id: the client's file name never picks the path.
    folder = Path(settings.MEDIA_ROOT) / "uploads" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    path = folder / "upload.tsv"
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is not None:
        shutil.move(temporary(), path)  # the handler's file on disk: no second copy
        return path
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def benchmark_import_view(request: HttpRequest) -> HttpResponse:
    bound = request.method == "POST"
    form = ImportForm(
        request.POST if bound else None,
        request.FILES if bound else None,
        refused=getattr(request, "upload_refused", False),
    )
    if bound and form.is_valid():
        path = _save_upload(form.cleaned_data["file"])
        params = {
            "path": str(path),
            "family": form.cleaned_data["family"],
            "name": form.cleaned_data["name"],
        }
        job = job_create(kind="import", params=params, user=request.user)
        transaction.on_commit(lambda: benchmark_import_task.delay(job.id))
        return redirect("job", pk=job.pk)
    return render(request, "annotations/import.html", {"form": form, "limits": _limits()})


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
    context = {
        "job": job,
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
