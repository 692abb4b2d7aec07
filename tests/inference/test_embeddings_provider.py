"""The embeddings provider through the real `openai` client against the loopback fake server."""

from __future__ import annotations

import base64
import io
import json
import logging
import random
import struct

import numpy as np
import pytest
from PIL import Image

from annotations.inference.embeddings import OpenAIEmbeddingsProvider
from annotations.inference.types import ProviderError
from annotations.scoring.retrieval import cross_modal_ranks, pooled_embedding
from tests.support.fake_openai import (
    FakeOpenAIServer,
    Reply,
    embedding_inputs,
    hashed_embeddings,
    hashed_vector,
    sha256_hex,
)

API_KEY = "sk-embed-0123456789abcdef"
TEXTS = ["Antral wall thickening.", "Ulcer, lesser curvature.", "Normal study.", "T3N1M0", "Node."]


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make_provider(server: FakeOpenAIServer, sleep: RecordingSleep | None = None, **overrides):
    settings = {"max_retries": 3, "timeout": 5.0, "rng": random.Random(0)}
    settings.update(overrides)
    return OpenAIEmbeddingsProvider(
        server.base_url, "fake-embedder", API_KEY, sleep=sleep or RecordingSleep(), **settings
    )


def png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (5, 5), shade).save(buffer, format="PNG")
    return buffer.getvalue()


def test_it_embeds_texts_in_batches_and_keeps_their_order():
    with FakeOpenAIServer() as server, make_provider(server, batch_size=2) as provider:
        result = provider.embed_texts(TEXTS)
        requests = server.embedding_requests
        [headers, *_] = server.embedding_request_headers

    assert result.vectors.shape == (5, 16)
    assert result.vectors.dtype == np.float64
    for row, text in zip(result.vectors, TEXTS, strict=True):
        assert row == pytest.approx(hashed_vector(text))
    assert [request["input"] for request in requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert {request["model"] for request in requests} == {"fake-embedder"}
    assert {request["encoding_format"] for request in requests} == {"float"}
    assert all("dimensions" not in request for request in requests)
    assert (result.requests, result.attempts) == (3, 3)
    assert result.prompt_tokens == sum(len(text.split()) for text in TEXTS)
    assert headers["authorization"] == f"Bearer {API_KEY}"


def test_it_sends_images_as_data_urls_one_input_each():
    images = [png(20), png(220)]
    with FakeOpenAIServer() as server, make_provider(server) as provider:
        result = provider.embed_images(images)
        [request] = server.embedding_requests

    assert len(request["input"]) == 2
    for url, image in zip(request["input"], images, strict=True):
        prefix, payload = url.split(",", 1)
        assert prefix == "data:image/png;base64"
        assert base64.b64decode(payload) == image
    assert result.vectors[0] == pytest.approx(hashed_vector(request["input"][0]))


def test_it_asks_for_dimensions_when_set():
    with FakeOpenAIServer() as server, make_provider(server, dimensions=8) as provider:
        provider.embed_texts(["x"])
        [request] = server.embedding_requests

    assert request["dimensions"] == 8


def test_reports_find_their_cases_through_the_endpoint():
    # Each case's two images and its report share a key, hence a vector: every rank is 1.
    cases = {f"case{n}": [png(10 * n), png(10 * n + 5)] for n in range(6)}
    reports = {f"case{n}": f"Report of patient {n}: thickening grade {n}." for n in range(6)}
    key_by_image = {sha256_hex(image): case for case, images in cases.items() for image in images}
    key_by_text = {text: case for case, text in reports.items()}

    def key_of(item: str) -> str:
        if item.startswith("data:"):
            return key_by_image[sha256_hex(base64.b64decode(item.split(",", 1)[1]))]
        return key_by_text[item]

    server = FakeOpenAIServer(embeddings=hashed_embeddings(key_of=key_of))
    with server, make_provider(server, batch_size=4) as provider:
        report_vectors = provider.embed_texts(list(reports.values())).vectors
        case_vectors = [
            pooled_embedding(provider.embed_images(images).vectors) for images in cases.values()
        ]

    ranks = cross_modal_ranks(report_vectors, case_vectors, list(range(6)))
    assert ranks.report_to_case == (1,) * 6
    assert ranks.case_to_report == (1,) * 6


def test_it_honours_retry_after_then_succeeds():
    def rate_limited_once(request_json, attempt_no):
        if attempt_no == 1:
            return Reply(status=429, headers={"Retry-After": "3"})
        return Reply(vectors=[hashed_vector(text) for text in embedding_inputs(request_json)])

    sleep = RecordingSleep()
    server = FakeOpenAIServer(embeddings=rate_limited_once)
    with server, make_provider(server, sleep) as provider:
        result = provider.embed_texts(["a", "b"])

    assert result.attempts == 2
    assert sleep.calls == [3.0]
    assert result.vectors[1] == pytest.approx(hashed_vector("b"))


def test_it_does_not_retry_a_400():
    sleep = RecordingSleep()
    server = FakeOpenAIServer(embeddings=lambda request_json, attempt_no: Reply(status=400))
    with server, make_provider(server, sleep) as provider, pytest.raises(ProviderError) as caught:
        provider.embed_texts(["a"])

    assert (caught.value.kind, caught.value.status, caught.value.attempts) == ("client", 400, 1)
    assert sleep.calls == []
    assert len(server.embedding_requests) == 1


def test_it_gives_up_when_retries_are_exhausted():
    sleep = RecordingSleep()
    server = FakeOpenAIServer(embeddings=lambda request_json, attempt_no: Reply(status=503))
    with server, make_provider(server, sleep, max_retries=2) as provider:
        with pytest.raises(ProviderError) as caught:
            provider.embed_texts(["a"])
        requests_seen = len(server.embedding_requests)

    assert (caught.value.kind, caught.value.status, caught.value.attempts) == ("exhausted", 503, 3)
    assert requests_seen == 3
    assert len(sleep.calls) == 2


def test_it_retries_a_timed_out_request():
    def slow_first(request_json, attempt_no):
        return Reply(vectors=[[1.0, 0.0]], delay=2.0 if attempt_no == 1 else 0.0)

    sleep = RecordingSleep()
    server = FakeOpenAIServer(embeddings=slow_first)
    with server, make_provider(server, sleep, timeout=0.3) as provider:
        result = provider.embed_texts(["a"])

    assert result.attempts == 2
    assert result.vectors.tolist() == [[1.0, 0.0]]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not JSON"),
        (b'{"data": []}', "asked for 2 embeddings, got 0"),
        (b'{"object": "list"}', "got no"),
        (
            b'{"data": [{"index": 0, "embedding": [1, 0]}, {"index": 0, "embedding": [0, 1]}]}',
            "twice",
        ),
        (
            b'{"data": [{"index": 0, "embedding": [1, 0]}, {"index": 5, "embedding": [0, 1]}]}',
            "range",
        ),
        (
            b'{"data": [{"index": 0, "embedding": [1, 0]}, {"index": 1, "embedding": [0, 1, 0]}]}',
            "length",
        ),
        (
            b'{"data": [{"index": 0, "embedding": [1, NaN]}, {"index": 1, "embedding": [0, 1]}]}',
            "NaN",
        ),
        (
            b'{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [0, 1]}]}',
            "non-empty",
        ),
        (
            b'{"data": [{"index": 0, "embedding": ["a", 1]}, {"index": 1, "embedding": [0, 1]}]}',
            "numbers",
        ),
        (
            b'{"data": [{"index": 0, "embedding": "@@"}, {"index": 1, "embedding": [0, 1]}]}',
            "base64",
        ),
        (b'{"data": [1, 2]}', "not an object"),
    ],
)
def test_it_calls_a_bad_answer_malformed_after_one_retry(body, reason):
    sleep = RecordingSleep()
    server = FakeOpenAIServer(embeddings=lambda request_json, attempt_no: Reply(raw_body=body))
    with server, make_provider(server, sleep) as provider, pytest.raises(ProviderError) as caught:
        provider.embed_texts(["a", "b"])

    assert caught.value.kind == "malformed"
    assert reason in caught.value.message
    assert caught.value.attempts == 2
    assert len(sleep.calls) == 1


def test_it_puts_vectors_back_in_index_order_and_decodes_base64():
    packed = base64.b64encode(struct.pack("<2f", 0.5, -2.0)).decode()
    body = json.dumps(
        {
            "data": [
                {"index": 1, "embedding": packed},
                {"index": 0, "embedding": [1, 0]},
            ],
            "usage": {"prompt_tokens": 7},
        }
    ).encode()
    server = FakeOpenAIServer(embeddings=lambda request_json, attempt_no: Reply(raw_body=body))
    with server, make_provider(server) as provider:
        result = provider.embed_texts(["first", "second"])

    assert result.vectors.tolist() == [[1.0, 0.0], [0.5, -2.0]]
    assert result.prompt_tokens == 7


def test_it_refuses_vectors_that_change_length_between_requests():
    def by_batch(request_json, attempt_no):
        size = 3 if embedding_inputs(request_json) == ["c"] else 2
        return Reply(vectors=[[1.0] * size for _ in embedding_inputs(request_json)])

    server = FakeOpenAIServer(embeddings=by_batch)
    with (
        server,
        make_provider(server, batch_size=2) as provider,
        pytest.raises(ProviderError) as caught,
    ):
        provider.embed_texts(["a", "b", "c"])

    assert caught.value.kind == "malformed"
    assert "between requests" in caught.value.message


def test_it_never_puts_the_api_key_in_errors_or_logs(caplog):
    echo = f'{{"error": {{"message": "key {API_KEY} echoed back"}}}}'.encode()

    def echo_key(request_json, attempt_no):
        return Reply(status=500 if attempt_no == 1 else 401, raw_body=echo)

    caplog.set_level(logging.DEBUG)
    server = FakeOpenAIServer(embeddings=echo_key)
    with server, make_provider(server) as provider, pytest.raises(ProviderError) as caught:
        provider.embed_texts(["a"])

    assert caught.value.kind == "client"
    assert "echoed back" in caught.value.message
    assert "retrying" in caplog.text
    for text in (str(caught.value), caught.value.message, repr(provider), caplog.text):
        assert API_KEY not in text


def test_it_refuses_inputs_it_cannot_send_before_any_request():
    with FakeOpenAIServer() as server, make_provider(server) as provider:
        with pytest.raises(ValueError, match="text 1 is empty"):
            provider.embed_texts(["report", "  "])
        with pytest.raises(ValueError, match="image 0 is not"):
            provider.embed_images([b"%PDF-1.7 not an image"])
        empty = provider.embed_texts([])
        requests_seen = len(server.embedding_requests)

    assert requests_seen == 0
    assert empty.vectors.shape == (0, 0)
    assert (empty.requests, empty.prompt_tokens) == (0, None)
    with pytest.raises(ValueError, match="batch_size"):
        OpenAIEmbeddingsProvider("http://127.0.0.1:1/v1", "m", batch_size=0)
    with pytest.raises(ValueError, match="dimensions"):
        OpenAIEmbeddingsProvider("http://127.0.0.1:1/v1", "m", dimensions=0)
