"""CT volume data for the viewer: windowed slice PNGs, and 16-bit voxels (one slice, a chunk of
slices, or the whole block) gzip-encoded for the browser to window itself."""

from __future__ import annotations

import zlib

from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

from annotations.access import ROLES, role_required
from annotations.imaging import chunks, ct
from annotations.models import Volume
from annotations.selectors import cases as selectors
from annotations.selectors import visibility

DEFAULT_WINDOW = ct.WINDOW_PRESETS["soft_tissue"]


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


def _stored_version(volume: Volume) -> str:
    """Changes when the volume's stored form does (a conversion to chunks)."""
    stored = selectors.volume_cache_file(volume)
    return f"{int(stored.stat().st_mtime)}-{'c' if stored.is_dir() else 'n'}"


def _gzip_stream(voxels, z0: int, z1: int):
    """Slices [z0, z1) as one gzip stream, compressed a slice at a time (bounded memory)."""
    deflate = zlib.compressobj(chunks.GZIP_LEVEL, zlib.DEFLATED, 31)  # 31: gzip framing
    for z in range(z0, z1):
        block = deflate.compress(chunks.little_endian_bytes(voxels[z]))
        if block:
            yield block
    yield deflate.flush()


@require_GET
@role_required(*ROLES)
def volume_voxels(request: HttpRequest, pk: int) -> HttpResponse | StreamingHttpResponse:
    """All voxels as int16 little-endian (z, y, x), gzip-encoded when accepted (compressed as
    it is sent: nothing is kept beside the stored chunks). The viewer streams chunks instead;
    this serves other clients. Cacheable and revalidated by ETag."""
    volume = visibility.get_volume_for_user_or_404(request.user, pk)
    voxels = selectors.volume_voxels(volume)
    etag = f'"v{volume.pk}-{_stored_version(volume)}"'
    if request.headers.get("If-None-Match") == etag:
        response: HttpResponse | StreamingHttpResponse = HttpResponse(status=304)
    elif "gzip" in request.headers.get("Accept-Encoding", ""):
        response = StreamingHttpResponse(
            _gzip_stream(voxels, 0, volume.size_z), content_type="application/octet-stream"
        )
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(
            chunks.little_endian_bytes(voxels[0 : volume.size_z]),
            content_type="application/octet-stream",
        )
    _voxel_headers(response, volume, etag, 0, volume.size_z)
    return response


# Volumes never change after import: the voxel answers are cacheable, revalidated by ETag.
_CACHE_CONTROL = "private, max-age=86400"


def _voxel_headers(
    response: HttpResponse | StreamingHttpResponse, volume: Volume, etag: str, z0: int, z1: int
) -> None:
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
    etag = f'"s{volume.pk}-{z}-{_stored_version(volume)}"'
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
    path = selectors.volume_chunk_file(volume, index)
    etag = f'"c{volume.pk}-{index}-{_stored_version(volume)}"'
    voxels = selectors.volume_voxels(volume)
    if request.headers.get("If-None-Match") == etag:
        response: HttpResponse = HttpResponse(status=304)
    elif "gzip" not in request.headers.get("Accept-Encoding", ""):
        response = HttpResponse(
            b"".join(chunks.little_endian_bytes(voxels[z]) for z in range(z0, z1)),
            content_type="application/octet-stream",
        )
    elif path is not None:  # the stored chunk, as it is
        response = FileResponse(path.open("rb"), content_type="application/octet-stream")
        response["Content-Encoding"] = "gzip"
        response["Content-Length"] = str(path.stat().st_size)
    else:  # a volume still stored as .npy
        response = HttpResponse(
            b"".join(_gzip_stream(voxels, z0, z1)), content_type="application/octet-stream"
        )
        response["Content-Encoding"] = "gzip"
    _voxel_headers(response, volume, etag, z0, z1)
    return response
