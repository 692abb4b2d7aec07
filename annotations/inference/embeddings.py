"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint, for report <-> case retrieval.

API:
- `OpenAIEmbeddingsProvider(base_url, model, api_key=None, *, batch_size=32, timeout=60.0,
  max_retries=5, dimensions=None, ...)`, thread-safe, a context manager:
  - `.embed_texts(texts) -> Embeddings` (reports),
  - `.embed_images(images) -> Embeddings` (encoded JPEG/PNG... bytes),
  - `.embed(inputs) -> Embeddings` (strings as they go on the wire).
- `Embeddings.vectors`: float64 array `(n, dimensions)`, row i for input i; also the prompt
  tokens the server counted, the requests and HTTP attempts made and the time they took.
- Rank with `scoring.retrieval.cross_modal_ranks` (pool a case's images with
  `scoring.retrieval.pooled_embedding`).

Images: OpenAI's own embeddings API is text-only; servers of multimodal embedding models
(vLLM, Jina-compatible, Infinity...) take an image as a `data:image/...;base64,...` URL. Our
convention: each image is sent as its data URL string, one `input` item per image, in a request
of images only (texts and images are never mixed in one request). Whether the vectors of text
and images share one space is the model's business: choose a CLIP-like model.

Requests: `input` is a list of at most `batch_size` strings, `encoding_format` is "float"
(servers that lack base64 support still answer), `dimensions` only when set. The answer must hold
one finite vector per input, all of one length (also across batches), in `index` order (a
base64 vector is decoded as little-endian float32, should a server send one anyway); anything
else is a malformed answer.

Retries follow the chat provider's policy (`inference.providers`): 408, 429, 5xx, timeouts and
connection errors are retried with full-jitter exponential backoff or the server's Retry-After;
other 4xx raise at once; a malformed 200 is retried once. Failures raise
`ProviderError(kind="client" | "exhausted" | "malformed")`; inputs we will not send (an empty
text, bytes that are not an image) raise ValueError before any request.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import openai

from annotations.inference.prompts import image_data_url, sniff_image_mime
from annotations.inference.providers import parse_retry_after
from annotations.inference.types import ProviderError

__all__ = ["Embeddings", "OpenAIEmbeddingsProvider"]

log = logging.getLogger(__name__)

_RETRYABLE_STATUS = frozenset({408, 429})


@dataclass(frozen=True)
class Embeddings:
    """Vectors for a list of inputs, and what it took to get them."""

    vectors: np.ndarray
    prompt_tokens: int | None
    requests: int
    attempts: int
    latency_ms: float


@dataclass(eq=False)
class _Retryable(Exception):
    reason: str
    status: int | None = None
    retry_after: float | None = None


@dataclass(eq=False)
class _Malformed(Exception):
    reason: str


def _vector(value: Any) -> list[float]:
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _Malformed("an embedding is a string but not base64") from exc
        if len(raw) % 4:
            raise _Malformed("a base64 embedding is not a whole number of float32 values")
        return np.frombuffer(raw, dtype="<f4").astype(np.float64).tolist()
    if not isinstance(value, list) or not value:
        raise _Malformed("an embedding is not a non-empty list of numbers")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
        raise _Malformed("an embedding holds something other than numbers")
    return [float(x) for x in value]


def _parse_embeddings_body(raw_text: str, expected: int) -> tuple[np.ndarray, int | None]:
    """Vectors in input order and the prompt tokens, or raise _Malformed."""
    try:
        body = json.loads(raw_text)
    except ValueError as exc:
        raise _Malformed(f"response body is not JSON ({exc.__class__.__name__})") from exc
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or len(data) != expected:
        count = len(data) if isinstance(data, list) else "no"
        raise _Malformed(f"asked for {expected} embeddings, got {count}")
    rows: dict[int, list[float]] = {}
    for position, item in enumerate(data):
        if not isinstance(item, dict):
            raise _Malformed("an embedding entry is not an object")
        index = item.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
            raise _Malformed(f"embedding index {index!r} is out of range")
        if index in rows:
            raise _Malformed(f"embedding index {index} appears twice")
        rows[index] = _vector(item.get("embedding"))
    if len({len(row) for row in rows.values()}) != 1:
        raise _Malformed("embeddings of one answer differ in length")
    vectors = np.array([rows[index] for index in range(expected)], dtype=np.float64)
    if not np.all(np.isfinite(vectors)):
        raise _Malformed("an embedding holds NaN or infinite values")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    tokens = usage.get("prompt_tokens")
    return vectors, tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


class OpenAIEmbeddingsProvider:
    """An embedding model behind any OpenAI-compatible `/v1/embeddings`; see the module docstring.

    The API key is sent as a Bearer header and never logged nor put in error messages.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        batch_size: int = 32,
        timeout: float = 60.0,
        max_retries: int = 5,
        dimensions: int | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        malformed_retries: int = 1,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if dimensions is not None and dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        self.base_url = base_url
        self.model = model
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.dimensions = dimensions
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.malformed_retries = malformed_retries
        self.extra_body = dict(extra_body or {})
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._clock = clock
        self._secret = api_key or ""
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=timeout
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbeddingsProvider(base_url={self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self._client.close()

    def __enter__(self) -> OpenAIEmbeddingsProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def embed_texts(self, texts: Sequence[str]) -> Embeddings:
        """One vector per text; an empty or blank text raises ValueError (servers refuse it)."""
        for number, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"text {number} is empty: there is nothing to embed")
        return self.embed(list(texts))

    def embed_images(self, images: Sequence[bytes]) -> Embeddings:
        """One vector per encoded image, each sent as its data URL."""
        for number, data in enumerate(images):
            if sniff_image_mime(data) == "application/octet-stream":
                raise ValueError(f"image {number} is not a JPEG/PNG/GIF/WebP/BMP/TIFF file")
        return self.embed([image_data_url(data) for data in images])

    def embed(self, inputs: Sequence[str]) -> Embeddings:
        """Vectors for `inputs` as sent, `batch_size` per request, in input order."""
        started = time.perf_counter()
        blocks: list[np.ndarray] = []
        tokens: int | None = 0
        attempts = 0
        for start in range(0, len(inputs), self.batch_size):
            vectors, batch_tokens, batch_attempts = self._batch(
                list(inputs[start : start + self.batch_size])
            )
            if blocks and vectors.shape[1] != blocks[0].shape[1]:
                raise self._error(
                    "malformed", "embeddings differ in length between requests", None, attempts
                )
            blocks.append(vectors)
            attempts += batch_attempts
            tokens = None if tokens is None or batch_tokens is None else tokens + batch_tokens
        return Embeddings(
            vectors=np.vstack(blocks) if blocks else np.empty((0, 0)),
            prompt_tokens=tokens if blocks else None,
            requests=len(blocks),
            attempts=attempts,
            latency_ms=(time.perf_counter() - started) * 1000,
        )

    def _batch(self, batch: list[str]) -> tuple[np.ndarray, int | None, int]:
        attempts = 0
        malformed_seen = 0
        while True:
            attempts += 1
            try:
                vectors, tokens = self._attempt(batch, attempts)
                return vectors, tokens, attempts
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

    def _attempt(self, batch: list[str], attempt_no: int) -> tuple[np.ndarray, int | None]:
        options: dict[str, Any] = {"encoding_format": "float"}
        if self.dimensions is not None:
            options["dimensions"] = self.dimensions
        try:
            raw = self._client.embeddings.with_raw_response.create(
                model=self.model, input=batch, extra_body=self.extra_body or None, **options
            )
            raw_text = raw.text
        except openai.APIStatusError as exc:
            status = exc.status_code
            reason = f"HTTP {status}: {exc.message}"
            if status in _RETRYABLE_STATUS or status >= 500:
                retry_after = parse_retry_after(exc.response.headers, now=self._clock)
                raise _Retryable(reason, status, retry_after) from None
            raise self._error("client", reason, status, attempt_no) from None
        except openai.APITimeoutError:
            raise _Retryable(f"timed out after {self.timeout:g}s") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(f"connection failed: {exc.__cause__ or exc}") from None
        return _parse_embeddings_body(raw_text, len(batch))

    def _wait(self, attempt_no: int, reason: str, retry_after: float | None) -> None:
        if retry_after is not None:
            delay = min(retry_after, self.backoff_max)
        else:
            ceiling = min(self.backoff_max, self.backoff_base * 2 ** (attempt_no - 1))
            delay = self._rng.uniform(0, ceiling)
        log.warning(
            "embeddings %s: attempt %d failed (%s); retrying in %.2fs",
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
