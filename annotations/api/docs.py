"""/api/docs/ (Swagger UI) and /api/redoc/: from our own static files, under a policy of their own.

Swagger UI's start-up script is served as a file of its own (the split view), so no page has an
inline script. The two viewers inject their own styles and Redoc starts a worker from a blob:
their policy allows that, and nothing else beyond the site's. OPTIONS is answered like any
Django view's (the Allow header), not rendered through the HTML template renderer.
"""

from __future__ import annotations

from django.views import View
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

DOCS_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


class _DocsPage:
    def options(self, request, *args, **kwargs):
        return View.options(self, request, *args, **kwargs)  # type: ignore[arg-type]

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        response["Content-Security-Policy"] = DOCS_POLICY
        return response


class ApiDocsView(_DocsPage, SpectacularSwaggerSplitView):
    pass


class ApiRedocView(_DocsPage, SpectacularRedocView):
    pass
