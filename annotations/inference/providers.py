"""Model providers: an OpenAI-compatible chat client with visible retries, and `predict`.

Retries are ours, not the `openai` client's (it is built with `max_retries=0`), so that every
attempt, wait and give-up is counted in the Completion/ProviderError and testable with an
injected `sleep`, `rng` and `clock`.

Retry policy:
- 429, 408, 5xx, timeouts and connection errors are retried with exponential backoff and full
  jitter (`uniform(0, min(backoff_max, backoff_base * 2**n))`); a `Retry-After` (or
  `retry-after-ms`) header, in seconds or as an HTTP-date, replaces the jittered wait, capped
  at `backoff_max`.
- Any other 4xx raises `ProviderError(kind="client")` at once: the request itself is wrong.
- A 200 whose body is not a chat completion (broken JSON, no `choices`) is retried **once**:
  proxies sometimes cut a body short, but a server that keeps answering garbage will not
  mend, and burning the whole retry budget on it only delays the run. The second malformed
  body raises `ProviderError(kind="malformed")`.
- When the retry budget is spent, `ProviderError(kind="exhausted")` carries the last reason.

Log-probabilities: `complete(messages, logprobs=True)` asks for `logprobs: true, top_logprobs:
TOP_LOGPROBS` (the answer letter's confidence is read from them). An endpoint that refuses them
(a client error on such a request) is asked the same request again without them, once; the
provider then remembers the refusal and stops asking, and every completion sent without them
because of it says so (`Completion.logprobs_refused`).
"""

from __future__ import annotations

import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from annotations.inference.baselines import (
    BaselineProvider,
    FirstOptionBaseline,
    FrequentAnswerBaseline,
    RandomBaseline,
)
from annotations.inference.prompts import (
    build_mcq_prompt,
    build_medqdeg_prompt,
    build_messages,
    render_template,
)
from annotations.inference.types import Completion, InferenceItem, ProviderError

__all__ = [
    "BaselineProvider",
    "ChatProvider",
    "Completion",
    "FirstOptionBaseline",
    "FrequentAnswerBaseline",
    "InferenceItem",
    "OpenAICompatibleProvider",
    "ProviderError",
    "RandomBaseline",
    "build_prompt",
    "parse_retry_after",
    "predict",
]

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 429})
TOP_LOGPROBS = 20


class ChatProvider(Protocol):
    """Anything that answers OpenAI-style chat messages."""

    def complete(self, messages: list[dict[str, Any]]) -> Completion: ...


def _openai() -> ModuleType:
    # Imported where a client is built: `openai` (and its HTTP stack) costs a third of a second
    # that commands, checks and workers which never call a model should not pay.
    import openai

    return openai


@dataclass(eq=False)
class _Retryable(Exception):
    reason: str
    status: int | None = None
    retry_after: float | None = None


@dataclass(eq=False)
class _Malformed(Exception):
    reason: str


def parse_retry_after(
    headers: Mapping[str, str], *, now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait asked by `Retry-After`/`retry-after-ms` headers, or None if absent/bad.

    `Retry-After` may be a number of seconds or an HTTP-date (RFC 9110); a date in the past
    means "now" (0).
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, moment.timestamp() - now())


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    # A null content is how servers express refusals and tool calls: an empty answer.
    refusal = message.get("refusal")
    return refusal if isinstance(refusal, str) else ""


def _token_count(usage: dict[str, Any], name: str) -> int | None:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _logprobs_content(choice: dict[str, Any]) -> list[dict[str, Any]] | None:
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return (
        [entry for entry in content if isinstance(entry, dict)]
        if isinstance(content, list)
        else None
    )


def _parse_chat_body(
    raw_text: str,
) -> tuple[str, int | None, int | None, list[dict[str, Any]] | None]:
    """Answer text, token counts and log-probabilities from a chat.completion body, or raise
    _Malformed."""
    try:
        body = json.loads(raw_text)
    except ValueError as exc:
        raise _Malformed(f"response body is not JSON ({exc.__class__.__name__})") from exc
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Malformed(f"response has no choices: {raw_text[:200]!r}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _Malformed("first choice has no message")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return (
        _message_text(message),
        _token_count(usage, "prompt_tokens"),
        _token_count(usage, "completion_tokens"),
        _logprobs_content(choices[0]),
    )


class OpenAICompatibleProvider:
    """A model behind any OpenAI-compatible `/v1/chat/completions` (OpenAI, vLLM, SGLang...).

    Thread-safe: one instance may serve many worker threads. The API key is sent as a Bearer
    header and is never logged nor put in error messages.
    """

    gives_logprobs = True  # `complete(..., logprobs=True)` asks for them (see `predict`)

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        malformed_retries: int = 1,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.malformed_retries = malformed_retries
        self.extra_body = dict(extra_body or {})
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._clock = clock
        self._secret = api_key or ""
        self.logprobs_refused = False  # set once the endpoint refused log-probabilities
        self._openai = openai = _openai()
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=timeout
        )

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(base_url={self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def complete(self, messages: list[dict[str, Any]], *, logprobs: bool = False) -> Completion:
        """Send one chat request, retrying transient failures; see the module docstring."""
        if not logprobs:
            return self._complete(messages, False)
        if self.logprobs_refused:
            return replace(self._complete(messages, False), logprobs_refused=True)
        try:
            return self._complete(messages, True)
        except ProviderError as error:
            if error.kind != "client":
                raise
            log.warning(
                "model %s refused log-probabilities (%s); asking without them",
                self.model,
                error.message,
            )
        completion = self._complete(messages, False)
        self.logprobs_refused = True
        return replace(completion, logprobs_refused=True)

    def _complete(self, messages: list[dict[str, Any]], logprobs: bool) -> Completion:
        attempts = 0
        malformed_seen = 0
        while True:
            attempts += 1
            try:
                return self._attempt(messages, attempts, logprobs)
            except _Malformed as failure:
                malformed_seen += 1
                if malformed_seen > self.malformed_retries or attempts > self.max_retries:
                    raise self._error("malformed", failure.reason, None, attempts) from None
                self._wait(attempts, failure.reason, None)
            except _Retryable as failure:
                if attempts > self.max_retries:
                    reason = f"gave up after {attempts} attempts; last: {failure.reason}"
                    raise self._error("exhausted", reason, failure.status, attempts) from None
                self._wait(attempts, failure.reason, failure.retry_after)

    def _attempt(
        self, messages: list[dict[str, Any]], attempt_no: int, logprobs: bool = False
    ) -> Completion:
        openai = self._openai
        started = time.perf_counter()
        asked: dict[str, Any] = {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if logprobs else {}
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                extra_body=self.extra_body or None,
                **asked,
            )
            raw_text = raw.text
        except openai.APIStatusError as exc:
            raise self._classify_status(exc, attempt_no) from None
        except openai.APITimeoutError:
            raise _Retryable(f"timed out after {self.timeout:g}s") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(f"connection failed: {exc.__cause__ or exc}") from None
        latency_ms = (time.perf_counter() - started) * 1000
        text, prompt_tokens, completion_tokens, content = _parse_chat_body(raw_text)
        return Completion(
            text,
            latency_ms,
            prompt_tokens,
            completion_tokens,
            attempt_no,
            logprobs=content if logprobs else None,
        )

    def _classify_status(self, exc: openai.APIStatusError, attempt_no: int) -> Exception:
        status = exc.status_code
        reason = f"HTTP {status}: {exc.message}"
        if status in _RETRYABLE_STATUS or status >= 500:
            retry_after = parse_retry_after(exc.response.headers, now=self._clock)
            return _Retryable(reason, status, retry_after)
        return self._error("client", reason, status, attempt_no)

    def _wait(self, attempt_no: int, reason: str, retry_after: float | None) -> None:
        if retry_after is not None:
            delay = min(retry_after, self.backoff_max)
        else:
            ceiling = min(self.backoff_max, self.backoff_base * 2 ** (attempt_no - 1))
            delay = self._rng.uniform(0, ceiling)
        log.warning(
            "model %s: attempt %d failed (%s); retrying in %.2fs",
            self.model,
            attempt_no,
            self._redact(reason),
            delay,
        )
        self._sleep(delay)

    def _redact(self, text: str) -> str:
        # An error body may echo request headers back; the key must not travel further.
        return text.replace(self._secret, "***") if self._secret else text

    def _error(self, kind: str, reason: str, status: int | None, attempts: int) -> ProviderError:
        return ProviderError(kind, self._redact(reason), status=status, attempts=attempts)


def _is_medqdeg(family: str) -> bool:
    return family.lower().replace("-", "").replace("_", "").replace(" ", "") == "medqdeg"


def build_prompt(item: InferenceItem, *, family: str, template: str | None = None) -> str:
    """The prompt text for `item`: the endpoint's template if any, else the family's own."""
    if template:
        return render_template(template, item.question, item.options, item.hint)
    if _is_medqdeg(family):
        return build_medqdeg_prompt(item.question, item.options)
    return build_mcq_prompt(item.question, item.options, item.hint)


def predict(
    provider: ChatProvider | BaselineProvider,
    item: InferenceItem,
    *,
    family: str | None = None,
    template: str | None = None,
    with_image: bool = True,
    logprobs: bool = False,
) -> Completion:
    """Answer one item with a model endpoint or a baseline.

    `family` defaults to `item.family`; `"medqdeg"` gets the MedQ-DEG prompt, every other
    family VLMEvalKit's generic multiple-choice prompt. `with_image=False` sends the text
    alone (the "can it be answered without the image" control). `logprobs=True` asks a provider that
    `gives_logprobs` (an `OpenAICompatibleProvider`) for token log-probabilities; others are
    asked as always. Raises ProviderError.
    """
    if isinstance(provider, BaselineProvider):
        return provider.answer(item)
    prompt = build_prompt(
        item, family=family if family is not None else item.family, template=template
    )
    messages = build_messages(prompt, item.images, with_image=with_image)
    if logprobs and getattr(provider, "gives_logprobs", False):
        return provider.complete(messages, logprobs=True)  # type: ignore[call-arg]
    return provider.complete(messages)
