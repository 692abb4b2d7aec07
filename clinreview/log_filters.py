"""Filters of the logging configuration (settings.LOGGING)."""

from __future__ import annotations

import logging


class ClientErrorWithoutTraceback(logging.Filter):
    """A refused request (4xx: a 403 for a role, a bad upload) is logged as one line: Django
    attaches the exception to the record, but its traceback says nothing an operator can act on.
    Server errors keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
