"""An upload handler that stops reading a request as soon as its file passes the limit.

Django's own handlers read the whole body before a view can look at the size, so a 50 GB
upload would be received (and written to disk) before being refused. This one refuses at the
file's first byte when the declared length is already too large, and otherwise at the chunk
that passes MAX_UPLOAD_BYTES; the rest of the body is never read. The view learns of it from
`request.upload_refused`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

# Room for the form's other fields and the multipart headers beside the file itself.
FORM_ROOM_BYTES = 1024**2


class LimitedUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: counts file bytes and halts past the limit."""

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        self.request_length = content_length
        self.limit = settings.MAX_UPLOAD_BYTES
        return None

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        if (self.request_length or 0) > self.limit + FORM_ROOM_BYTES:
            self._refuse()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > self.limit:
            self._refuse()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler makes the file

    def _refuse(self) -> None:
        if self.request is not None:
            self.request.upload_refused = True
        raise StopUpload(connection_reset=True)


def too_large_message() -> str:
    """The refusal of an upload past MAX_UPLOAD_BYTES, in the reader's language."""
    return _("The file is larger than the upload limit of %(limit)s; nothing was read past it.") % {
        "limit": filesizeformat(settings.MAX_UPLOAD_BYTES)
    }
