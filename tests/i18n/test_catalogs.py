"""The Chinese catalogs are complete, compiled from their current sources, and extracted anew."""

from __future__ import annotations

import gettext
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.i18n.po import read_po

ROOT = Path(settings.BASE_DIR)
MESSAGES = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES"
DOMAINS = ("django", "djangojs")
IGNORED = ["-i", ".venv/*", "-i", "var/*", "-i", "static/vendor/*"]


def entries(domain: str):
    return [e for e in read_po(MESSAGES / f"{domain}.po") if e.msgid and not e.obsolete]


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_chinese_entry_is_translated_and_none_is_fuzzy(domain):
    every = read_po(MESSAGES / f"{domain}.po")
    header = next(e for e in every if e.msgid == "")
    assert "fuzzy" not in header.flags
    assert "Plural-Forms: nplurals=1; plural=0;" in header.msgstr[0]
    empty = [e.msgid for e in entries(domain) if not all(e.msgstr.values()) or not e.msgstr]
    fuzzy = [e.msgid for e in entries(domain) if "fuzzy" in e.flags]
    assert empty == [] and fuzzy == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_placeholders_survive_translation(domain):
    # msgfmt --check refuses a python-format entry whose placeholders differ from its msgid.
    result = subprocess.run(
        ["msgfmt", "--check", "-o", os.devnull, str(MESSAGES / f"{domain}.po")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    named = re.compile(r"%\([a-z_]+\)[sd]")
    for entry in entries(domain):
        wanted = sorted(named.findall(entry.msgid_plural or entry.msgid))
        assert sorted(named.findall(entry.msgstr[0])) == wanted, entry.msgid


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_compiled_catalog_is_in_step_with_its_source(domain, tmp_path):
    fresh = tmp_path / f"{domain}.mo"
    subprocess.run(["msgfmt", "-o", str(fresh), str(MESSAGES / f"{domain}.po")], check=True)
    with open(MESSAGES / f"{domain}.mo", "rb") as committed, open(fresh, "rb") as compiled:
        committed_catalog = gettext.GNUTranslations(committed)._catalog
        assert committed_catalog == gettext.GNUTranslations(compiled)._catalog, (
            f"{domain}.mo is stale: run manage.py compilemessages -l zh_Hans -i .venv -i var"
        )


def test_every_javascript_gettext_call_reaches_the_catalog():
    # xgettext silently stops reading a module it misparses (e.g. "(<" looks like E4X to it).
    literal = re.compile(r'gettext\("((?:[^"\\]|\\.)*)"\)')
    called = {
        m
        for path in (ROOT / "static" / "js").glob("*.js")
        for m in literal.findall(path.read_text())
    }
    assert called - {e.msgid for e in entries("djangojs")} == set()


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """makemessages run afresh on a copy of the sources, with the committed catalogs."""
    copy = tmp_path_factory.mktemp("extract")
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.mo")
    for folder in ("annotations", "clinreview", "templates", "locale"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=junk)
    shutil.copytree(ROOT / "static" / "js", copy / "static" / "js")
    shutil.copy(ROOT / "manage.py", copy)
    env = {
        **os.environ,
        "VAR_DIR": str(copy / "var"),
        "DJANGO_SETTINGS_MODULE": "clinreview.settings",
    }
    env.pop("DATABASE_URL", None)
    for domain in DOMAINS:
        subprocess.run(
            [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "-d", domain, *IGNORED],
            cwd=copy,
            env=env,
            check=True,
            capture_output=True,
        )
    return copy / "locale" / "zh_Hans" / "LC_MESSAGES"


@pytest.mark.parametrize("domain", DOMAINS)
def test_makemessages_finds_no_new_or_vanished_string(domain, extracted):
    found = {e.key for e in read_po(extracted / f"{domain}.po") if e.msgid and not e.obsolete}
    committed = {e.key for e in entries(domain)}
    assert sorted(found - committed, key=str) == [], "new strings: run makemessages and translate"
    assert sorted(committed - found, key=str) == [], "strings no longer used: run makemessages"
