"""Scripts for the loopback OpenAI-compatible server (`tests.support.fake_openai`): what it
answers, and helpers that read a request.

A script is ``script(request_json, attempt_no) -> Reply``; ``attempt_no`` counts identical
request bodies (1 the first time a body is seen, 2 for its first retry...). Chat scripts:
``answer_letter``, ``flaky``, ``varied_formats``, ``oracle``, and for Gastric-X's tasks ``replay``
(fixed text per prompt or per image: reports) and ``box_answers`` (box coordinates in the styles
real models use). Embeddings scripts fill ``Reply.vectors`` (one vector per input):
``hashed_embeddings``. Pure standard library, like the server.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BOX_STYLES",
    "Reply",
    "Script",
    "answer_letter",
    "box_answers",
    "embedding_inputs",
    "extract_question",
    "flaky",
    "hashed_embeddings",
    "hashed_vector",
    "image_count",
    "image_digests",
    "option_letters",
    "oracle",
    "prompt_text",
    "replay",
    "sha256_hex",
    "varied_formats",
]

_REFUSAL = "I cannot determine the answer from this image."
_OPTION_LINE = re.compile(r"^([A-Z])\. ", re.MULTILINE)


@dataclass
class Reply:
    """What the server sends back for one request."""

    status: int = 200
    text: str = "A"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw_body: bytes | None = None
    vectors: list[list[float]] | None = None  # embeddings requests: one vector per input
    # Chat requests asking for log-probabilities: the probabilities of the option letters at the
    # reply's first letter token (its top list); without them every token has probability 1.
    # `logprobs` replaces the whole `choices[0].logprobs.content` when given.
    letter_probs: dict[str, float] | None = None
    logprobs: list[dict[str, Any]] | None = None


Script = Callable[[dict[str, Any], int], Reply]


# --- helpers to read a chat request ---------------------------------------------------------


def prompt_text(request_json: dict[str, Any]) -> str:
    """The text parts of the last user message, joined by newlines."""
    messages = request_json.get("messages") or [{}]
    content = messages[-1].get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if part.get("type") == "text")


def image_count(request_json: dict[str, Any]) -> int:
    """How many image parts the request carries, over all messages."""
    count = 0
    for message in request_json.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for part in content if part.get("type") == "image_url")
    return count


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _data_url_bytes(url: str) -> bytes | None:
    if not url.startswith("data:") or ";base64," not in url:
        return None
    try:
        return base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except ValueError:
        return None


def image_digests(request_json: dict[str, Any]) -> list[str]:
    """sha256 (hex) of the decoded bytes of every data-URL image in a chat request, in order."""
    digests = []
    for message in request_json.get("messages") or []:
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
            data = _data_url_bytes(url)
            if data is not None:
                digests.append(sha256_hex(data))
    return digests


def embedding_inputs(request_json: dict[str, Any]) -> list[str]:
    """The `input` of an embeddings request as a list of strings."""
    value = request_json.get("input")
    return [value] if isinstance(value, str) else [str(item) for item in value or []]


def option_letters(prompt: str) -> list[str]:
    """Letters of the `X. text` option lines found in a prompt (A-D when none are found)."""
    return _OPTION_LINE.findall(prompt) or ["A", "B", "C", "D"]


def _stable_int(text: str) -> int:
    # Python's hash() is salted per process; scripts must answer the same way in every run.
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def extract_question(prompt: str) -> str:
    """The question inside a VLMEvalKit generic or MedQ-DEG prompt (best effort)."""
    match = re.search(r"(?:^|\n)Question: (.*?)\n(?:Options:\n|Please select|$)", prompt, re.S)
    if match:
        return match.group(1)
    # MedQ-DEG prompts start with the question, followed by a blank line.
    return prompt.split("\n\n", 1)[0]


# --- ready-made scripts ---------------------------------------------------------------------


def answer_letter(letter_fn: str | Callable[[str], str] = "A") -> Script:
    """Always answer 200 with `letter_fn(prompt_text)` (or the constant string given)."""

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        prompt = prompt_text(request_json)
        text = letter_fn if isinstance(letter_fn, str) else letter_fn(prompt)
        return Reply(text=text)

    return script


def flaky(
    first_n_fail: int = 2,
    status: int = 429,
    retry_after: str | None = "0",
    text: str = "A",
) -> Script:
    """Fail the first `first_n_fail` attempts of every request with `status`, then answer."""

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        if attempt_no <= first_n_fail:
            headers = {"Retry-After": retry_after} if retry_after is not None else {}
            return Reply(status=status, headers=headers, text="")
        return Reply(text=text)

    return script


_FORMATS = ("{L}", "The answer is {L}.", "({L}) {T}", "**{L}**", _REFUSAL)


def varied_formats(request_json: dict[str, Any], attempt_no: int) -> Reply:
    """Answer in one of several real-world styles, chosen by a hash of the prompt.

    Styles: "B", "The answer is B.", "(B) polyp", "**B**" and a refusal, so answer
    extraction meets what real models write.
    """
    prompt = prompt_text(request_json)
    digest = _stable_int(prompt)
    letters = option_letters(prompt)
    letter = letters[digest % len(letters)]
    option = re.search(rf"^{letter}\. (.*)$", prompt, re.MULTILINE)
    template = _FORMATS[(digest // 7) % len(_FORMATS)]
    return Reply(text=template.format(L=letter, T=option.group(1) if option else "it"))


def oracle(answers: dict[str, str], accuracy: float = 0.8, seed: int = 0) -> Script:
    """Answer each known question correctly with probability `accuracy`.

    `answers` maps question text to the gold letter. The draw is seeded by (seed, question),
    so a retried or repeated request gets the same answer. Unknown questions get a refusal.
    """

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        prompt = prompt_text(request_json)
        question = _find_question(prompt, answers)
        if question is None:
            return Reply(text=_REFUSAL)
        gold = answers[question]
        rng = random.Random(f"{seed}:{question}")
        if rng.random() < accuracy:
            return Reply(text=gold)
        wrong = [letter for letter in option_letters(prompt) if letter != gold] or ["Z"]
        return Reply(text=rng.choice(wrong))

    return script


def _find_question(prompt: str, answers: dict[str, str]) -> str | None:
    question = extract_question(prompt)
    if question in answers:
        return question
    # Custom templates may place the question anywhere: fall back to the longest contained key.
    contained = [known for known in answers if known and known in prompt]
    return max(contained, key=len) if contained else None


def replay(
    by_prompt: Mapping[str, str] | None = None,
    *,
    by_image: Mapping[str, str] | None = None,
    default: str = _REFUSAL,
) -> Script:
    """Fixed text per request: for the exact prompt, else the longest key the prompt contains,
    else for the first image whose sha256 (of its bytes) is in `by_image`, else `default`.

    Report prompts are the same for every case, so reports are usually keyed by image.
    """
    by_prompt, by_image = dict(by_prompt or {}), dict(by_image or {})

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        prompt = prompt_text(request_json)
        if prompt in by_prompt:
            return Reply(text=by_prompt[prompt])
        contained = [key for key in by_prompt if key and key in prompt]
        if contained:
            return Reply(text=by_prompt[max(contained, key=len)])
        for digest in image_digests(request_json):
            if digest in by_image:
                return Reply(text=by_image[digest])
        return Reply(text=default)

    return script


BOX_STYLES: dict[str, str] = {
    "list": "[{0:g}, {1:g}, {2:g}, {3:g}]",
    "tuple": "The lesion is located at ({0:g},{1:g},{2:g},{3:g}).",
    "json": '```json\n{{"x0": {0:g}, "y0": {1:g}, "x1": {2:g}, "y1": {3:g}}}\n```',
    "qwen25": '```json\n[{{"bbox_2d": [{0:g}, {1:g}, {2:g}, {3:g}], "label": "tumor"}}]\n```',
    "points": "Top-left ({0:g}, {1:g}), bottom-right ({2:g}, {3:g}).",
    "swapped": "[{2:g}, {3:g}, {0:g}, {1:g}]",
}


def box_answers(by_image: Mapping[str, Sequence[float] | None], style: str | None = None) -> Script:
    """Answer each image (keyed by the sha256 of its bytes) with its box `[x0, y0, x1, y1]`.

    `style` picks one of BOX_STYLES; None rotates through them by a hash of the image, so one
    run meets every style. An image mapped to None, or unknown, is answered "none".
    """
    if style is not None and style not in BOX_STYLES:
        raise ValueError(f"unknown box style {style!r}")

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        for digest in image_digests(request_json):
            if digest in by_image:
                box = by_image[digest]
                if box is None:
                    break
                names = sorted(BOX_STYLES)
                chosen = style or names[_stable_int(digest) % len(names)]
                return Reply(text=BOX_STYLES[chosen].format(*box))
        return Reply(text="none")

    return script


def hashed_vector(text: str, dimensions: int = 16) -> list[float]:
    """A unit vector drawn from a generator seeded by the text: equal texts, equal vectors."""
    rng = random.Random(_stable_int(text))
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def hashed_embeddings(dimensions: int = 16, key_of: Callable[[str], str] | None = None) -> Script:
    """Embed each input as `hashed_vector(key_of(input))`.

    `key_of` (default: the input itself) lets a test give a report and its case's image the same
    key, hence the same vector: rankings are then known in advance.
    """

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        keys = [key_of(text) if key_of else text for text in embedding_inputs(request_json)]
        return Reply(vectors=[hashed_vector(key, dimensions) for key in keys])

    return script
