"""Release pages: list, new release, live build progress, streamed downloads, diff."""

from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRefresh

from annotations.access import CURATOR, role_required
from annotations.charts import count_charts
from annotations.formats.zipstream import stream_zip
from annotations.forms import ReleaseForm
from annotations.models import Benchmark, ItemKind, Release, ReleaseStatus
from annotations.selectors import releases as selectors
from annotations.selectors import visibility
from annotations.services import releases as release_services
from annotations.services.errors import DomainError


@require_GET
@role_required(CURATOR)
def release_list(request: HttpRequest, name: str | None = None) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name) if name else None
    releases = visibility.in_scope(selectors.release_list(benchmark=benchmark), request.user)
    page = Paginator(releases, 50).get_page(request.GET.get("page"))
    benchmarks = Benchmark.objects.order_by("name")
    context = {"benchmark": benchmark, "page": page, "benchmarks": benchmarks}
    return render(request, "releases/list.html", context)


@require_http_methods(["GET", "POST"])
@role_required(CURATOR)
def release_new(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    form = ReleaseForm(
        request.POST or None,
        initial={"name": benchmark.name},
        choices=selectors.release_filter_choices(benchmark),
    )
    preview = None
    if request.method == "POST" and form.is_valid():
        selection = form.selection()
        preview = selectors.release_preview(benchmark, **selection)
        try:
            release_services.check_release_name(form.cleaned_data["name"])
            release_services.check_release_name(form.cleaned_data["version"], what="version")
            building = request.POST.get("confirm") == form.signature()
            if building and not request.POST.get("publish"):
                # Publishing cannot be undone: the page asks for a tick, and so does the server.
                raise DomainError(_("Tick “Publish this release” to build it."))
            if building and not preview.empty_reason:
                release = release_services.release_start(
                    benchmark=benchmark,
                    name=form.cleaned_data["name"],
                    version=form.cleaned_data["version"],
                    user=request.user,
                    **selection,
                )
                return redirect("release", pk=release.pk)
        except DomainError as error:
            form.add_error(None, str(error))
    context = {"benchmark": benchmark, "form": form, "preview": preview}
    if preview is not None and form.is_valid():
        context["signature"] = form.signature()
    return render(request, "releases/new.html", context)


def _release_or_404(request: HttpRequest, pk: int) -> Release:
    releases = Release.objects.select_related("benchmark", "created_by")
    return visibility.get_release_for_user_or_404(request.user, pk, releases)


@require_GET
@role_required(CURATOR)
def release_detail(request: HttpRequest, pk: int) -> HttpResponse:
    release = _release_or_404(request, pk)
    if request.htmx and release.status not in (ReleaseStatus.QUEUED, ReleaseStatus.BUILDING):
        # The build ended while the page was polling: show the whole page (files, charts).
        return HttpResponseClientRefresh()
    filters, withhold = release_services.release_selection(release)
    others = selectors.release_list(benchmark=release.benchmark).filter(
        status=ReleaseStatus.PUBLISHED
    )
    context = {
        "release": release,
        "filters": filters,
        "withhold": withhold,
        "others": others.exclude(pk=release.pk),
        "charts": _charts(release.manifest.get("counts", {})),
        "report": release.manifest.get("report_columns", {}).values(),
        "files": _files(release.manifest),
    }
    template = "releases/detail.html#progress" if request.htmx else "releases/detail.html"
    return render(request, template, context)


def _charts(counts: dict) -> list[dict]:
    """The bar charts of the page (drawn as inline SVG): counts by category, l2-category, split
    and, for a release with other kinds than multiple choice, by kind (named in words)."""
    kinds = dict(ItemKind.choices)
    if counts.get("kind"):
        counts = {**counts, "kind": {str(kinds.get(k, k)): n for k, n in counts["kind"].items()}}
    titles = {
        "category": _("By category"),
        "l2-category": _("By l2-category"),
        "split": _("By split"),
        "kind": _("By kind of item"),
    }
    return count_charts(counts, titles)


# What each file of a release is for, by the part of its name after the release's name.
_FILE_PURPOSES = {
    ".tsv": _("VLMEvalKit multiple choice, images in base64 (VQA and classification items)"),
    ".json": _("every item with its reviews, revisions and provenance"),
    "_report.tsv": _("open answers and reports, VLMEvalKit's open-VQA layout"),
    "_localization.json": _("target boxes: COCO 2D boxes, 3D boxes in voxels and LPS mm"),
    "_retrieval.json": _("report–case pairs for retrieval in both directions"),
    "_coco.json": _("2D boxes drawn on the images (COCO)"),
    "_local.tsv": _("VLMEvalKit's local layout: image paths under images/"),
    "_test.tsv": _("the withheld split, without answers"),
    "_report_test.tsv": _("the withheld split's open items, without answers"),
    "_test_answers.json": _("the answer key of the withheld split"),
}


def _files(manifest: dict) -> list[tuple[str, dict, str]]:
    """(file name, its digests, what it holds) for each file the manifest lists."""
    name = manifest.get("name", "")
    files = []
    for filename, digest in manifest.get("files", {}).items():
        suffix = filename[len(name) :] if filename.startswith(name) else filename
        purpose = _FILE_PURPOSES.get(suffix, "")
        if not purpose and suffix.startswith("_part") and suffix.endswith(".tsv"):
            purpose = _("a part of %(file)s (about 1 GB each)") % {"file": f"{name}.tsv"}
        files.append((filename, digest, purpose))
    return files


@require_GET
@role_required(CURATOR)
def release_download(request: HttpRequest, pk: int, filename: str) -> FileResponse:
    published = Release.objects.filter(status=ReleaseStatus.PUBLISHED)
    release = visibility.get_release_for_user_or_404(request.user, pk, published)
    visibility.check_gold_visible(request.user, release.benchmark_id)
    # Only the files the manifest lists (and the manifest itself): never a path from the URL.
    if filename != "manifest.json" and filename not in release.manifest.get("files", {}):
        raise Http404
    path = Path(release.path) / filename
    if not path.is_file():
        raise Http404
    return FileResponse(open(path, "rb"), as_attachment=True, filename=filename)  # noqa: SIM115


@require_GET
@role_required(CURATOR)
def release_archive(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """Every file of a published release (its manifest's, the manifest, the local layout's
    images/) in one zip, streamed: the same files, the same names, one download."""
    published = Release.objects.filter(status=ReleaseStatus.PUBLISHED)
    release = visibility.get_release_for_user_or_404(request.user, pk, published)
    visibility.check_gold_visible(request.user, release.benchmark_id)
    root = Path(release.path)
    names = [*release.manifest.get("files", {}), "manifest.json"]
    entries = [(name, root / name) for name in names if (root / name).is_file()]
    images = root / "images"
    if release.manifest.get("layout", {}).get("local") and images.is_dir():
        entries += [(f"images/{path.name}", path) for path in sorted(images.iterdir())]
    folder = f"{release.manifest.get('name', release.benchmark.name)}"
    response = StreamingHttpResponse(
        stream_zip((f"{folder}/{name}", path) for name, path in entries),
        content_type="application/zip",
    )
    response["Content-Disposition"] = f'attachment; filename="{folder}.zip"'
    return response


@require_POST
@role_required(CURATOR)
def release_retry(request: HttpRequest, pk: int) -> HttpResponse:
    release = get_object_or_404(Release, pk=pk)
    try:
        release_services.release_retry(release=release)
    except DomainError as error:
        messages.error(request, str(error))
    return redirect("release", pk=release.pk)


@require_GET
@role_required(CURATOR)
def release_diff(request: HttpRequest, pk: int) -> HttpResponse:
    new = _release_or_404(request, pk)
    against = request.GET.get("against", "")
    if not against.isdigit():
        raise Http404
    old = _release_or_404(request, int(against))
    # The diff shows the answers that changed.
    for release in (new, old):
        visibility.check_gold_visible(request.user, release.benchmark_id)
    diff = selectors.release_diff(old, new)
    return render(request, "releases/diff.html", {"diff": diff})
