"""Model endpoint hosts are restricted by default (issue 29): in production no host is allowed
until ENDPOINT_ALLOWED_HOSTS names the model servers ("*" opens it on purpose)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

from annotations.services.errors import DomainError
from annotations.services.secrets import base_url_check

ROOT = Path(__file__).resolve().parents[2]


def test_production_settings_allow_no_endpoint_host_by_default():
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "ENDPOINT_ALLOWED_HOSTS")}
    env["SECRET_KEY"] = "a-production-like-secret-key-of-enough-length-0123456789"
    code = "import clinreview.settings as s; print(s.DEBUG, s.ENDPOINT_ALLOWED_HOSTS)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False []"


@override_settings(ENDPOINT_ALLOWED_HOSTS=[])
def test_with_no_allowed_host_every_endpoint_is_refused_saying_why():
    for url in ("http://127.0.0.1:6379/v1", "https://api.openai.com/v1", "http://redis/v1"):
        with pytest.raises(DomainError) as refused:
            base_url_check(url)
        assert refused.value.code == "host_refused"
        assert "ENDPOINT_ALLOWED_HOSTS" in str(refused.value)


@override_settings(ENDPOINT_ALLOWED_HOSTS=["*"])
def test_a_star_allows_any_host():
    assert base_url_check("http://gpu7.lab/v1") == "http://gpu7.lab/v1"
