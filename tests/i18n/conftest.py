from __future__ import annotations

import pytest
from django.utils import translation


@pytest.fixture(autouse=True)
def _back_to_the_default_language():
    # A request in Chinese leaves Chinese active in the test thread: later tests expect English.
    yield
    translation.deactivate()
