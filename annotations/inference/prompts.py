"""Prompt text and chat messages, built exactly as VLMEvalKit builds them.

Our numbers must match what `run.py --data NAME` reports on the same release, so the generic
prompt follows `ImageMCQDataset.build_prompt` and the MedQ-DEG prompt follows
`MedQDEGBenchDataset.build_prompt` character for character (see FORMATS.md).
"""

from __future__ import annotations

import base64
import string
from collections.abc import Mapping
from typing import Any

__all__ = [
    "TEMPLATE_FIELDS",
    "build_mcq_prompt",
    "build_medqdeg_prompt",
    "build_messages",
    "image_data_url",
    "non_empty_options",
    "options_block",
    "render_template",
    "sniff_image_mime",
]

TEMPLATE_FIELDS = frozenset({"question", "options", "hint"})
_MEDQDEG_LETTERS = "ABCDE"  # the MedQ-DEG reader only looks at these columns


def _is_blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    try:
        # NaN is the only value not equal to itself; pandas.NA refuses to be a bool.
        return bool(value != value)
    except TypeError:
        return True


def non_empty_options(options: Mapping[str, Any]) -> dict[str, str]:
    """The options that hold text, in letter order (empty, None and NaN cells dropped)."""
    return {
        letter: str(options[letter]) for letter in sorted(options) if not _is_blank(options[letter])
    }


def options_block(options: Mapping[str, Any]) -> str:
    """The `X. text` lines of the non-empty options, joined by newlines (no trailing one)."""
    return "\n".join(f"{letter}. {text}" for letter, text in non_empty_options(options).items())


def build_mcq_prompt(question: str, options: Mapping[str, Any], hint: str = "") -> str:
    """VLMEvalKit's generic image multiple-choice prompt (`ImageMCQDataset.build_prompt`).

    The trailing space before the final newline is VLMEvalKit's and is kept on purpose.
    """
    prompt = ""
    if not _is_blank(hint):
        prompt += f"Hint: {hint}\n"
    prompt += f"Question: {question}\n"
    present = non_empty_options(options)
    if present:
        prompt += "Options:\n"
        prompt += "".join(f"{letter}. {text}\n" for letter, text in present.items())
        prompt += "Please select the correct answer from the options above. \n"
    return prompt


def build_medqdeg_prompt(question: str, options: Mapping[str, Any]) -> str:
    """VLMEvalKit's MedQ-DEG-Bench prompt: question, options A-E (stripped), instruction."""
    present = {
        letter: text.strip()
        for letter, text in non_empty_options(options).items()
        if letter in _MEDQDEG_LETTERS
    }
    option_text = "\n".join(f"{letter}. {text}" for letter, text in present.items())
    return (
        f"{question}\n\n"
        f"{option_text}\n\n"
        "Answer with the option letter from the given choices directly."
    )


def render_template(
    template: str, question: str, options: Mapping[str, Any], hint: str = ""
) -> str:
    """Fill a ModelEndpoint's custom prompt template.

    Only `{question}`, `{options}` (the `X. text` lines) and `{hint}` are allowed; `{{` and
    `}}` give literal braces. Anything else (unknown names, positional `{}`, attribute or
    index access, format specs) raises ValueError: templates are user input and must never
    reach into Python objects.
    """
    values = {"question": question, "options": options_block(options), "hint": hint or ""}
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"prompt template is malformed: {exc}") from exc
    pieces: list[str] = []
    for literal, field_name, format_spec, conversion in parsed:
        pieces.append(literal)
        if field_name is None:
            continue
        if field_name not in TEMPLATE_FIELDS:
            allowed = ", ".join(f"{{{name}}}" for name in sorted(TEMPLATE_FIELDS))
            raise ValueError(
                f"prompt template has unknown placeholder {{{field_name}}}; allowed: {allowed}"
            )
        if format_spec or conversion:
            raise ValueError(f"prompt template placeholder {{{field_name}}} takes no format spec")
        pieces.append(values[field_name])
    return "".join(pieces)


def sniff_image_mime(data: bytes) -> str:
    """The MIME type of encoded image bytes, read from their magic number."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"BM"):
        return "image/bmp"
    if data.startswith((b"II*\x00", b"MM\x00*")):
        return "image/tiff"
    return "application/octet-stream"


def image_data_url(data: bytes) -> str:
    """A `data:` URL holding the image bytes as base64."""
    return f"data:{sniff_image_mime(data)};base64,{base64.b64encode(data).decode('ascii')}"


def build_messages(
    prompt: str,
    images: list[bytes],
    *,
    image_first: bool = True,
    with_image: bool = True,
) -> list[dict[str, Any]]:
    """OpenAI chat messages: one user message with the images and the prompt text.

    Images come before the text by default, as VLMEvalKit orders them. With
    `with_image=False` (the "answer without the image" control) or no images, the content
    is the plain prompt string, which text-only servers accept too.
    """
    if not with_image or not images:
        return [{"role": "user", "content": prompt}]
    image_parts = [
        {"type": "image_url", "image_url": {"url": image_data_url(data)}} for data in images
    ]
    text_part = {"type": "text", "text": prompt}
    content = [*image_parts, text_part] if image_first else [text_part, *image_parts]
    return [{"role": "user", "content": content}]
