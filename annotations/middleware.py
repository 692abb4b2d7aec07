from __future__ import annotations

import json
from urllib.parse import unquote_to_bytes

from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.translation import gettext as _

# A JSON or form body larger than this is left to the parsers (they have their own limits).
_BODY_SCAN_LIMIT = 1024 * 1024
_FORM = "application/x-www-form-urlencoded"


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Login on every page; the API authenticates itself (token or session) and answers 401/403."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def _bad_bytes(raw: bytes) -> bool:
    """NUL (PostgreSQL cannot store it in text) or bytes that are not UTF-8."""
    if b"\x00" in raw:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _bad_urlencoded(raw: bytes) -> bool:
    return _bad_bytes(unquote_to_bytes(raw.replace(b"+", b" ")))


def _bad_json(raw: bytes) -> bool:
    """NUL bytes, raw or escaped as \\u0000 in a string or a key; the parser 400s the rest."""
    if _bad_bytes(raw):
        return True
    try:
        document = json.loads(raw)
    except ValueError:
        return False
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return True
        elif isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


class UndecodableInputMiddleware:
    """A NUL byte or undecodable bytes in the path, the query string or a form/JSON body is a
    400 before any view runs, never a 500 from the database deep inside one."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._refused(request):
            message = _("The request contains a NUL byte or characters that are not UTF-8.")
            if request.path_info.startswith("/api/"):
                return JsonResponse({"detail": message, "code": "bad_input"}, status=400)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)

    def _refused(self, request: HttpRequest) -> bool:
        path = request.path_info
        if "\x00" in path:
            return True
        if _bad_urlencoded(request.META.get("QUERY_STRING", "").encode("latin-1", "replace")):
            return True
        length = request.META.get("CONTENT_LENGTH") or "0"
        if request.method in ("GET", "HEAD", "OPTIONS") or not length.isdigit():
            return False
        if not 0 < int(length) <= _BODY_SCAN_LIMIT:
            return False
        content_type = request.content_type or ""
        if content_type == _FORM:
            return _bad_urlencoded(request.body)
        if content_type == "application/json" or content_type.endswith("+json"):
            return _bad_json(request.body)
        if content_type == "multipart/form-data":
            fields = request.POST.lists()
            return any("\x00" in f"{key}{value}" for key, values in fields for value in values)
        return False
