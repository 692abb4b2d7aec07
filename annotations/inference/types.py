"""Plain data shared by prompt building, providers and baselines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class InferenceItem:
    """One benchmark item as a model sees it.

    `key` identifies the item across runs (seeds the random baseline); `images` are encoded
    image bytes (JPEG/PNG...) in display order; `family` is the benchmark family
    (`"endobench"`, `"medqdeg"`, `"gastricx"`...), `category` its scoring category.
    """

    key: str
    question: str
    options: dict[str, str]
    hint: str = ""
    images: list[bytes] = field(default_factory=list)
    family: str = ""
    category: str = ""


@dataclass(frozen=True)
class Completion:
    """One model answer: raw text, request latency, token usage and HTTP attempts made.

    `logprobs` is OpenAI's `choices[0].logprobs.content` when they were asked for and given
    (one entry per generated token: `token`, `logprob`, `top_logprobs`); `logprobs_refused`
    says the endpoint refused them (the request was sent again without).
    """

    text: str
    latency_ms: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1
    logprobs: list[dict[str, Any]] | None = None
    logprobs_refused: bool = False


class ProviderError(Exception):
    """A model call that failed for good.

    kind: `"client"` (4xx other than 429: our request is wrong, retrying cannot help),
    `"exhausted"` (retryable failures outlasted the retry budget) or `"malformed"`
    (the server answered 200 with a body that is not a chat completion).
    """

    def __init__(
        self, kind: str, message: str, *, status: int | None = None, attempts: int = 0
    ) -> None:
        super().__init__(
            f"{kind}: {message}" if status is None else f"{kind} ({status}): {message}"
        )
        self.kind = kind
        self.status = status
        self.message = message
        self.attempts = attempts
