from __future__ import annotations

from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Login on every page; the API authenticates itself (token or session) and answers 401/403."""

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
