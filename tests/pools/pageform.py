"""The fields of a rendered form, as a browser would send them (stdlib HTML parser)."""

from __future__ import annotations

from html.parser import HTMLParser


class _FormParser(HTMLParser):
    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker
        self.inside = False
        self.action = ""
        self.fields: list[tuple[str, str]] = []
        self.select: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form" and self.marker in attributes:
            self.inside, self.action = True, attributes.get("action", "")
        if not self.inside or "name" not in attributes and tag != "option":
            return
        name = attributes.get("name")
        if tag == "input":
            kind = attributes.get("type", "text")
            if kind in ("checkbox", "radio") and "checked" not in attributes:
                return
            if kind != "file":
                default = "on" if kind in ("checkbox", "radio") else ""
                self.fields.append((name, attributes.get("value", default)))
        elif tag == "select":
            self.select = name
        elif tag == "option" and self.select and "selected" in attributes:
            self.fields.append((self.select, attributes.get("value", "")))
        elif tag == "textarea":
            self.fields.append((name, ""))

    def handle_endtag(self, tag):
        if tag == "select":
            self.select = None
        if tag == "form":
            self.inside = False


def rendered_form(html: str, marker: str) -> tuple[str, list[tuple[str, str]]]:
    """(action, [(name, value), ...]) of the form carrying the attribute `marker`."""
    parser = _FormParser(marker)
    parser.feed(html)
    if not parser.action:
        raise AssertionError(f"no form with {marker} on the page")
    return parser.action, parser.fields


def as_post(fields: list[tuple[str, str]], changes: dict[str, object]) -> dict[str, object]:
    """The rendered fields with the user's changes (a list value: several choices)."""
    data: dict[str, object] = {}
    for name, value in fields:
        if name in data:
            previous = data[name]
            data[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            data[name] = value
    for name, value in changes.items():
        if value is None:
            data.pop(name, None)
        else:
            data[name] = value
    return data
