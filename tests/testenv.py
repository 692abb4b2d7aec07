"""Loaded as a pytest plugin (-p tests.testenv) so that it runs before Django reads its settings."""

from __future__ import annotations

import os
import tempfile

# Media, releases and the broker's folders of the test run live in a fresh temporary folder.
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="clinreview-test-"))
