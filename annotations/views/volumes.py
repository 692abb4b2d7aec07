"""CT volume data for the viewer: windowed slice PNGs, and 16-bit voxels (one slice, a chunk of
slices, or the whole block) gzip-encoded for the browser to window itself."""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.http import http_date
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from annotations.access import ROLES, role_required
from annotations.imaging import chunks, ct
from annotations.models import Volume
from annotations.selectors import cases as selectors
from annotations.selectors import visibility
from annotations.services.volume_chunks import volume_chunk_file

DEFAULT_WINDOW = ct.WINDOW_PRESETS["soft_tissue"]
# Level 1 squeezes int16 CT about as well as level 6 here and is several times faster.
GZIP_LEVEL = 1


def _window(request: HttpRequest) -> tuple[float, float]:
    try:
        width = float(request.GET.get("ww", DEFAULT_WINDOW[0]))
        level = float(request.GET.get("wl", DEFAULT_WINDOW[1]))
    except ValueError:
        raise ValueError("ww and wl must be numbers") from None
    if not 1 <= width <= 65536 or not -32768 <= level <= 32767:
        raise ValueError("window width must be 1..65536 HU and level within int16")
    return width, level


@require_GET
@role_required(*ROLES)
@cache_control(private=True, max_age=86400)
def volume_slice_png(request: HttpRequest, pk: int, z: int) -> HttpResponse:
    """Axial slice ``z`` windowed server-side (first paint, thumbnails, no-JS fallback)."""
    try:
        width, level = _window(request)
    except ValueError as error:
        return HttpResponseBadRequest(str(error))
    volume = visibility.get_volume_for_user_or_404(request.user, pk)
    if not 0 <= z < volume.size_z:
        raise Http404("slice out of range")
    png = ct.render_slice_png(selectors.volume_voxels(volume), z, width, level)
    return HttpResponse(png, content_type="image/png")


def _gzip_file(volume: Volume) -> Path:
    """The voxel block gzip-compressed, made once beside the cache and reused."""
    cache = selectors.volume_cache_file(volume)
    target = cache.with_suffix(".raw.gz")
    if target.is_file() and target.stat().st_mtime >= cache.stat().st_mtime:
        return target
    voxels = selectors.volume_voxels(volume)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".gz")
    try:
        with (
            os.fdopen(handle, "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0) as stream,
        ):
            for z in range(voxels.shape[0]):
                # '<i2': the browser reads an Int16Array, which is little-endian everywhere.
                stream.write(voxels[z].astype("<i2", copy=False).tobytes())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


@require_GET
@role_required(*ROLES)
def volume_voxels(request: HttpRequest, pk: int) -> HttpResponse:
    """All voxels as int16 little-endian (z, y, x), sent gzip-encoded for the browser to inflate.

    A client that does not accept gzip gets the raw bytes. Volumes never change after import,
    so the response is cacheable and revalidated by ETag.
    """
    volume = visibility.get_volume_for_user_or_404(request.user, pk)
    compressed = _gzip_file(volume)
    etag = f'"v{volume.pk}-{int(compressed.stat().st_mtime)}-{compressed.stat().st_size}"'
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    elif "gzip" in request.headers.get("Accept-Encoding", ""):
        response = FileResponse(compressed.open("rb"), content_type="application/octet-stream")
        response["Content-Encoding"] = "gzip"
        response["Content-Length"] = str(compressed.stat().st_size)
    else:
        voxels = selectors.volume_voxels(volume)
        response = HttpResponse(
            voxels.astype("<i2", copy=False).tobytes(), content_type="application/octet-stream"
        )
    response["ETag"] = etag
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = "private, max-age=86400"
    response["Last-Modified"] = http_date(compressed.stat().st_mtime)
    response["X-Volume-Shape"] = f"{volume.size_z},{volume.size_y},{volume.size_x}"
    return response


# Volumes never change after import: the voxel answers are cacheable, revalidated by ETag.
_CACHE_CONTROL = "private, max-age=86400"


def _voxel_headers(response: HttpResponse, volume: Volume, etag: str, z0: int, z1: int) -> None:
    response["ETag"] = etag
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = _CACHE_CONTROL
    response["X-Volume-Shape"] = f"{volume.size_z},{volume.size_y},{volume.size_x}"
    response["X-Slices"] = f"{z0},{z1}"  # the slices [z0, z1) this answer holds


@require_GET
@role_required(*ROLES)
def volume_slice_voxels(request: HttpRequest, pk: int, z: int) -> HttpResponse:
    """Slice ``z`` as int16 little-endian (y, x), gzip-encoded when accepted: the viewer's first
    paint of a phase, and of a slice scrolled to before its chunk arrived."""
    volume = visibility.get_volume_for_user_or_404(request.user, pk)
    if not 0 <= z < volume.size_z:
        raise Http404("slice out of range")
    cache = selectors.volume_cache_file(volume)
    etag = f'"s{volume.pk}-{z}-{int(cache.stat().st_mtime)}"'
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    else:
        data = chunks.little_endian_bytes(selectors.volume_voxels(volume)[z])
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            data = chunks.gzip_bytes(data)
            response = HttpResponse(data, content_type="application/octet-stream")
            response["Content-Encoding"] = "gzip"
        else:
            response = HttpResponse(data, content_type="application/octet-stream")
    _voxel_headers(response, volume, etag, z, z + 1)
    return response


@require_GET
@role_required(*ROLES)
def volume_chunk(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """Chunk ``index``: slices [index·n, (index+1)·n) as int16 little-endian (z, y, x),
    gzip-encoded (``n`` = ``chunks.CHUNK_SLICES``); what the viewer streams around the slice
    shown."""
    volume = visibility.get_volume_for_user_or_404(request.user, pk)
    try:
        z0, z1 = chunks.chunk_range(index, volume.size_z)
    except chunks.ChunkError:
        raise Http404("chunk out of range") from None
    path = volume_chunk_file(volume, index)
    stat = path.stat()
    etag = f'"c{volume.pk}-{index}-{int(stat.st_mtime)}-{stat.st_size}"'
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    elif "gzip" in request.headers.get("Accept-Encoding", ""):
        response = FileResponse(path.open("rb"), content_type="application/octet-stream")
        response["Content-Encoding"] = "gzip"
        response["Content-Length"] = str(stat.st_size)
    else:
        response = HttpResponse(
            chunks.little_endian_bytes(selectors.volume_voxels(volume)[z0:z1]),
            content_type="application/octet-stream",
        )
    _voxel_headers(response, volume, etag, z0, z1)
    response["Last-Modified"] = http_date(stat.st_mtime)
    return response
