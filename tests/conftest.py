from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _files_in_tmp(request, tmp_path_factory):
    """Django tests store media and releases in fresh temporary folders.

    Pure-module tests (formats, imaging, scoring, inference) also run without the Django plugin.
    """
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.MEDIA_ROOT = tmp_path_factory.mktemp("media")
    settings.RELEASES_ROOT = tmp_path_factory.mktemp("releases")
    yield
