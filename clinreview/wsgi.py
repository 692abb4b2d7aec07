from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from clinreview.startup import require_secret_key

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")
application = get_wsgi_application()
require_secret_key()
