"""Find English left on a page rendered in Chinese: the words a clinician would still read."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from django.contrib.auth import get_user_model

from annotations.models import (
    TAXONOMY_FIELDS,
    Benchmark,
    Case,
    Indicator,
    Item,
    ModelEndpoint,
    Prediction,
    Release,
    Review,
    Run,
)

# Shown as is in every language: names, units, formats, file and key names, statistics' authors.
ALLOWED = {
    "ClinReview",
    "API",
    "HU",
    "CT",
    "MRI",
    "TNM",
    "W",
    "L",
    "mm",
    "ms",
    "s",
    "px",
    "x",
    "y",
    "VLMEvalKit",
    "EndoBench",
    "MedQ",
    "DEG",
    "Bench",
    "Gastric",
    "X",
    "OpenAI",
    "URL",
    "TSV",
    "JSON",
    "COCO",
    "Wilson",
    "Krippendorff",
    "Cohen",
    "Bradley",
    "Terry",
    "Elo",
    "bootstrap",
    "pandas",
    "sha256",
    "md5",
    "EXIF",
    "XMP",
    "IPTC",
    "PHI",
    "HTTP",
    "PNG",
    "JPEG",
    "DICOM",
    "N",
    "vs",
    "gt",
    "run",
    "py",
    "data",
    "mmbench",
    "ccbench",
    "circular",
    "mmcr",
    "NAME",
    "test",
    "tsv",
    "manage",
    "import_benchmark",
    "ROOT",
    "family",
    "gastricx",
    "name",
    "images",
    "manifest",
    "json",
    "zip",
    "KB",
    "MB",
    "GB",
    "TB",
    "Enter",
    "Ctrl",
    "Esc",  # units of size, and keys as printed on them
}
# Elements whose text is code, keys or data rather than prose.
SKIPPED = {"script", "style", "code", "kbd", "pre"}
VISIBLE_ATTRIBUTES = ("title", "alt", "placeholder", "aria-label")
# Identifiers (gaussian_blur, l2_category, T3N1M0) are codes, not prose.
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’]*")
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[bool] = []  # True where the element is skipped

    def _skipping(self) -> bool:
        return any(self.stack)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        skip = tag in SKIPPED or values.get("translate") == "no"
        if not self._skipping() and not skip:
            self.parts += [values[a] for a in VISIBLE_ATTRIBUTES if values.get(a)]
            if (
                tag == "input"
                and values.get("type") in ("submit", "button")
                and values.get("value")
            ):
                self.parts.append(values["value"])
        if tag not in VOID:
            self.stack.append(skip)

    def handle_endtag(self, tag):
        if tag not in VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if not self._skipping():
            self.parts.append(data)


def visible_text(html: str) -> list[str]:
    parser = _Text()
    parser.feed(html)
    return [part.strip() for part in parser.parts if part.strip()]


def content_strings() -> list[str]:
    """Benchmark content and names stored by the fixtures: shown as imported, never translated."""
    values: list[str] = []
    for item in Item.objects.all():
        values += [item.question, item.hint, *item.options, *map(str, item.extra.values())]
        values += [getattr(item, field) or "" for field in TAXONOMY_FIELDS]
        values.append(item.degradation_type)
    for case in Case.objects.all():
        values += [case.case_id, case.tnm, *map(str, case.reports.values())]
    values += [i.name for i in Indicator.objects.all()] + [i.unit for i in Indicator.objects.all()]
    values += [b.name for b in Benchmark.objects.all()] + [
        b.description for b in Benchmark.objects.all()
    ]
    values += list(get_user_model().objects.values_list("username", flat=True))
    values += [r.label for r in Run.objects.all()]
    values += [e.name for e in ModelEndpoint.objects.all()] + [
        e.model for e in ModelEndpoint.objects.all()
    ]
    values += [p.raw_text for p in Prediction.objects.all()]
    values += [f"{r.name} {r.version}" for r in Release.objects.all()] + [
        r.name for r in Release.objects.all()
    ]
    values += [str(r.path) for r in Release.objects.all()]
    values += [r.comment for r in Review.objects.all()]
    return sorted({v.strip() for v in values if v and v.strip()}, key=len, reverse=True)


def content_pattern(content: list[str]) -> re.Pattern | None:
    """Whole occurrences of the content strings, longest first."""
    if not content:
        return None
    alternatives = "|".join(re.escape(value) for value in content)
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")


def english_words(html: str, content: list[str]) -> list[str]:
    """Words of the page's visible text that are neither allowed nor benchmark content."""
    pattern = content_pattern(content)
    leftovers: list[str] = []
    for text in visible_text(html):
        if pattern is not None:
            text = pattern.sub(" ", text)
        leftovers += [
            word
            for word in WORD.findall(text)
            if word not in ALLOWED and len(word) > 1 and not re.search(r"[_0-9]", word)
        ]
    return leftovers
