from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from clinreview.startup import require_secret_key

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")
application = get_asgi_application()
require_secret_key()
