"""Submit what a page submits, without a browser: take the rendered form, change only what a
person changes (a field the page shows, a button they press), send the rest as rendered.

Pressing a decision button does what the page's script does on that click (static/js/review.js):
`data-verdict` fills the hidden `verdict`, `data-choice` the hidden `choice`, and `data-reject`
sets `reject`. A field the form does not have cannot be set: the page could not send it.
"""

from __future__ import annotations

import lxml.html


class PageForm:
    def __init__(self, response, xpath: str):
        assert response.status_code == 200, response.status_code
        document = lxml.html.fromstring(response.content.decode())
        found = document.xpath(xpath)
        assert len(found) == 1, f"{len(found)} forms match {xpath}"
        self.form = found[0]
        self.action = self.form.get("action")

    def set(self, name: str, value) -> PageForm:
        """Type into a field, pick an option, check a radio button."""
        assert name in self.form.inputs, f"the page's form has no field {name!r}"
        self.form.inputs[name].value = str(value)
        return self

    def set_all(self, name: str, values: list[str]) -> PageForm:
        """Type into each of the page's fields called `name`, in order (option rows)."""
        fields = [field for field in self.form.inputs if field.name == name]
        assert len(fields) == len(values), f"the page has {len(fields)} fields {name!r}"
        for field, value in zip(fields, values, strict=True):
            field.value = value
        return self

    def press(self, xpath: str) -> PageForm:
        """Press the form's button matching `xpath` (relative to the form)."""
        buttons = self.form.xpath(xpath)
        assert len(buttons) == 1, f"{len(buttons)} buttons match {xpath}"
        button = buttons[0]
        assert button.get("type") == "submit", "this button does not submit the form"
        if button.get("data-verdict") is not None:
            self.set("verdict", button.get("data-verdict"))
        if button.get("data-choice") is not None:
            self.set("choice", button.get("data-choice"))
            self.set("reject", "on" if button.get("data-reject") is not None else "")
        return self

    def data(self) -> dict[str, list[str]]:
        values: dict[str, list[str]] = {}
        for name, value in self.form.form_values():
            values.setdefault(name, []).append(value)
        return values

    def submit(self, client, **headers):
        """Post the form as the page does (`HTTP_HX_REQUEST` when htmx sends it)."""
        return client.post(self.action, self.data(), **headers)
