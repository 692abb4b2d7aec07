"""Loaded as a pytest plugin (-p tests.testenv) so that it runs before Django reads its settings."""

from __future__ import annotations

import os
import tempfile

# Media, releases and the broker's folders of the test run live in a fresh temporary folder.
os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix="clinreview-test-"))
# The suite runs the development configuration (plain HTTP, dev keys); DEBUG is off by default,
# and tests of the production defaults start their own processes without it.
os.environ.setdefault("DEBUG", "1")
