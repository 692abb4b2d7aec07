"""Importing a benchmark from the browser, and following a background job's progress."""

from __future__ import annotations

import uuid
from pathlib import Path

from django import forms
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods

from annotations.access import CURATOR, role_required
from annotations.models import Benchmark, Job
from annotations.selectors.jobs import job_chunks
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

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > settings.MAX_UPLOAD_BYTES:
            raise forms.ValidationError(_("The file is larger than the upload limit."))
        return upload


def _save_upload(upload) -> Path:
    # A folder per upload, named by a random id: the client's file name never picks the path.
    folder = Path(settings.MEDIA_ROOT) / "uploads" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    path = folder / "upload.tsv"
    with open(path, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def benchmark_import_view(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        path = _save_upload(form.cleaned_data["file"])
        params = {
            "path": str(path),
            "family": form.cleaned_data["family"],
            "name": form.cleaned_data["name"],
        }
        job = job_create(kind="import", params=params, user=request.user)
        transaction.on_commit(lambda: benchmark_import_task.delay(job.id))
        return redirect("job", pk=job.pk)
    return render(request, "annotations/import.html", {"form": form})


@require_GET
@role_required(CURATOR)
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=pk)
    template = "annotations/job.html#progress" if request.htmx else "annotations/job.html"
    return render(request, template, {"job": job, "chunks": job_chunks(job)})
