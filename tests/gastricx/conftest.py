from __future__ import annotations

import pytest

from annotations.selectors.cases import memmaps
from tests.factories import make_personas


@pytest.fixture(autouse=True)
def _own_media(settings, tmp_path_factory):
    # Imported volumes, images and releases of each test in folders of its own; and never a
    # memmap opened by a previous test.
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    settings.RELEASES_ROOT = tmp_path_factory.mktemp("releases")
    memmaps.clear()
    yield
    memmaps.clear()


@pytest.fixture
def people(db):
    return make_personas()
