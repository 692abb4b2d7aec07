"""The API's `limit`/`offset` pagination, bounded: a client asks for at most MAX_LIMIT rows a
page, and a limit or offset past what the database counts with is a page like any other (the
last or an empty one), never a 500."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
# Far beyond any table here, well within PostgreSQL's bigint.
MAX_OFFSET = 2**53


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_offset(self, request) -> int:
        return min(super().get_offset(request), MAX_OFFSET)
