"""The real `openai` client against the loopback fake server; only the clock is mocked."""

from __future__ import annotations

import io
import logging
import random
import socket
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from PIL import Image

from annotations.inference import (
    InferenceItem,
    OpenAICompatibleProvider,
    ProviderError,
    build_medqdeg_prompt,
    predict,
)
from annotations.inference.providers import parse_retry_after
from tests.support.fake_openai import FakeOpenAIServer, Reply, answer_letter, flaky, prompt_text

API_KEY = "sk-test-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "Question: Which organ?\nOptions:\nA. Liver\nB. Spleen\n"}]


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


class CeilingRng:
    """Full jitter always drawing its upper bound, so the backoff ceiling itself is visible."""

    def uniform(self, low: float, high: float) -> float:
        return high


def make_provider(
    server: FakeOpenAIServer, sleep: RecordingSleep, **overrides
) -> OpenAICompatibleProvider:
    settings = {"max_retries": 3, "timeout": 5.0, "rng": random.Random(0)}
    settings.update(overrides)
    return OpenAICompatibleProvider(server.base_url, "fake-vlm", API_KEY, sleep=sleep, **settings)


def test_it_returns_the_answer_with_tokens_and_latency():
    sleep = RecordingSleep()
    with FakeOpenAIServer(answer_letter("B"), latency=0.05) as server:
        completion = make_provider(server, sleep, temperature=0.0, max_tokens=16).complete(MESSAGES)

        [body] = server.requests

    assert completion.text == "B"
    assert completion.attempts == 1
    assert completion.latency_ms >= 50
    assert completion.prompt_tokens == len(MESSAGES[0]["content"].split())
    assert completion.completion_tokens == 1
    assert body["model"] == "fake-vlm"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 16
    assert body["messages"] == MESSAGES
    assert sleep.calls == []


def test_it_honours_retry_after_seconds_on_429():
    sleep = RecordingSleep()
    with FakeOpenAIServer(flaky(first_n_fail=1, status=429, retry_after="3", text="C")) as server:
        completion = make_provider(server, sleep).complete(MESSAGES)
        requests_seen = len(server.requests)

    assert completion.text == "C"
    assert completion.attempts == 2
    assert sleep.calls == [3.0]
    assert requests_seen == 2


def test_it_honours_retry_after_given_as_an_http_date():
    moment = datetime(2030, 5, 1, 12, 0, 0, tzinfo=UTC)
    header = format_datetime(moment, usegmt=True)
    sleep = RecordingSleep()
    with FakeOpenAIServer(flaky(first_n_fail=1, status=503, retry_after=header)) as server:
        provider = make_provider(server, sleep, clock=lambda: moment.timestamp() - 7)
        completion = provider.complete(MESSAGES)

    assert completion.attempts == 2
    assert sleep.calls == [7.0]


def test_it_caps_a_long_retry_after_at_backoff_max():
    sleep = RecordingSleep()
    with FakeOpenAIServer(flaky(first_n_fail=1, status=429, retry_after="120")) as server:
        make_provider(server, sleep, backoff_max=4.0).complete(MESSAGES)

    assert sleep.calls == [4.0]


def test_it_retries_a_500_with_seeded_full_jitter():
    sleep = RecordingSleep()
    with FakeOpenAIServer(flaky(first_n_fail=1, status=500, retry_after=None, text="D")) as server:
        completion = make_provider(server, sleep, rng=random.Random(42), backoff_base=0.5).complete(
            MESSAGES
        )

    assert completion.text == "D"
    assert completion.attempts == 2
    assert sleep.calls == [random.Random(42).uniform(0, 0.5)]


def test_its_backoff_ceiling_doubles_up_to_backoff_max():
    sleep = RecordingSleep()
    script = flaky(first_n_fail=4, status=503, retry_after=None)
    with FakeOpenAIServer(script) as server:
        provider = make_provider(server, sleep, rng=CeilingRng(), max_retries=5, backoff_max=3.0)
        completion = provider.complete(MESSAGES)

    assert completion.attempts == 5
    assert sleep.calls == [0.5, 1.0, 2.0, 3.0]


def test_it_retries_a_timed_out_request():
    def slow_first(request_json, attempt_no):
        return Reply(text="A", delay=2.0 if attempt_no == 1 else 0.0)

    sleep = RecordingSleep()
    with FakeOpenAIServer(slow_first) as server:
        completion = make_provider(server, sleep, timeout=0.3).complete(MESSAGES)

    assert completion.text == "A"
    assert completion.attempts == 2
    assert len(sleep.calls) == 1


def test_it_reports_a_malformed_body_after_one_retry():
    sleep = RecordingSleep()
    with FakeOpenAIServer(lambda request_json, attempt_no: Reply(raw_body=b"{not json")) as server:
        with pytest.raises(ProviderError) as caught:
            make_provider(server, sleep).complete(MESSAGES)
        requests_seen = len(server.requests)

    assert caught.value.kind == "malformed"
    assert caught.value.attempts == 2
    assert requests_seen == 2


def test_it_recovers_when_only_one_body_was_malformed():
    def broken_once(request_json, attempt_no):
        return Reply(raw_body=b'{"id": "x"') if attempt_no == 1 else Reply(text="B")

    with FakeOpenAIServer(broken_once) as server:
        completion = make_provider(server, RecordingSleep()).complete(MESSAGES)

    assert (completion.text, completion.attempts) == ("B", 2)


def test_it_calls_a_body_without_choices_malformed():
    with (
        FakeOpenAIServer(lambda request_json, attempt_no: Reply(raw_body=b'{"id": "x"}')) as server,
        pytest.raises(ProviderError) as caught,
    ):
        make_provider(server, RecordingSleep(), malformed_retries=0).complete(MESSAGES)

    assert caught.value.kind == "malformed"
    assert caught.value.attempts == 1


def test_it_does_not_retry_a_400():
    sleep = RecordingSleep()
    with FakeOpenAIServer(lambda request_json, attempt_no: Reply(status=400)) as server:
        with pytest.raises(ProviderError) as caught:
            make_provider(server, sleep).complete(MESSAGES)
        requests_seen = len(server.requests)

    assert (caught.value.kind, caught.value.status, caught.value.attempts) == ("client", 400, 1)
    assert requests_seen == 1
    assert sleep.calls == []


def test_it_gives_up_when_retries_are_exhausted():
    sleep = RecordingSleep()
    with FakeOpenAIServer(lambda request_json, attempt_no: Reply(status=503)) as server:
        with pytest.raises(ProviderError) as caught:
            make_provider(server, sleep, max_retries=2).complete(MESSAGES)
        requests_seen = len(server.requests)

    assert (caught.value.kind, caught.value.status, caught.value.attempts) == ("exhausted", 503, 3)
    assert "503" in caught.value.message
    assert requests_seen == 3
    assert len(sleep.calls) == 2


def test_it_retries_connection_errors_then_gives_up():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    sleep = RecordingSleep()
    provider = OpenAICompatibleProvider(
        f"http://127.0.0.1:{closed_port}/v1", "m", API_KEY, max_retries=1, sleep=sleep, timeout=2.0
    )

    with pytest.raises(ProviderError) as caught:
        provider.complete(MESSAGES)

    assert (caught.value.kind, caught.value.status, caught.value.attempts) == ("exhausted", None, 2)
    assert len(sleep.calls) == 1


def test_it_sends_the_api_key_as_a_bearer_header():
    with FakeOpenAIServer(answer_letter("A")) as server:
        make_provider(server, RecordingSleep()).complete(MESSAGES)
        [headers] = server.request_headers

    assert headers["authorization"] == f"Bearer {API_KEY}"


def test_it_sends_a_placeholder_key_when_the_endpoint_needs_none():
    with FakeOpenAIServer(answer_letter("A")) as server:
        OpenAICompatibleProvider(server.base_url, "m", None).complete(MESSAGES)
        [headers] = server.request_headers

    assert headers["authorization"] == "Bearer EMPTY"


def test_it_never_puts_the_api_key_in_errors_or_logs(caplog):
    echo = f'{{"error": {{"message": "key {API_KEY} echoed back"}}}}'.encode()

    def echo_key(request_json, attempt_no):
        return Reply(status=500 if attempt_no == 1 else 401, raw_body=echo)

    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer(echo_key) as server:
        provider = make_provider(server, RecordingSleep())
        with pytest.raises(ProviderError) as caught:
            provider.complete(MESSAGES)

    assert caught.value.kind == "client"
    assert "echoed back" in caught.value.message
    assert "retrying" in caplog.text
    for text in (str(caught.value), caught.value.message, repr(provider), caplog.text):
        assert API_KEY not in text


def test_predict_sends_the_medqdeg_prompt_after_the_images():
    buffer = io.BytesIO()
    Image.new("L", (8, 8), 90).save(buffer, format="PNG")
    item = InferenceItem(
        "7", "Which modality?", {"A": "CT", "B": "MRI"}, "", [buffer.getvalue()], "medqdeg"
    )

    with FakeOpenAIServer(answer_letter("A")) as server:
        predict(make_provider(server, RecordingSleep()), item)
        [body] = server.requests

    [image_part, text_part] = body["messages"][0]["content"]
    assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
    assert text_part["text"] == build_medqdeg_prompt("Which modality?", {"A": "CT", "B": "MRI"})


def test_predict_without_the_image_sends_only_the_generic_prompt_text():
    item = InferenceItem(
        "8", "Which organ?", {"A": "Liver", "B": "Spleen"}, "", [b"\xff\xd8\xff"], "endobench"
    )

    with FakeOpenAIServer(answer_letter("A")) as server:
        predict(make_provider(server, RecordingSleep()), item, with_image=False)
        [body] = server.requests

    assert body["messages"] == [{"role": "user", "content": prompt_text(body)}]
    assert prompt_text(body).startswith("Question: Which organ?\nOptions:\nA. Liver\n")


def test_predict_uses_the_endpoint_template_when_given():
    item = InferenceItem("9", "Which organ?", {"A": "Liver", "B": "Spleen"}, "", [], "endobench")

    with FakeOpenAIServer(answer_letter("A")) as server:
        provider = make_provider(server, RecordingSleep())
        predict(provider, item, template="Q: {question}\n{options}\nLetter:")
        [body] = server.requests

    assert prompt_text(body) == "Q: Which organ?\nA. Liver\nB. Spleen\nLetter:"


def test_one_provider_serves_concurrent_threads():
    def echo_question_number(request_json, attempt_no):
        return Reply(text=prompt_text(request_json).split()[-1], delay=0.05)

    with FakeOpenAIServer(echo_question_number) as server:
        provider = make_provider(server, RecordingSleep())
        with ThreadPoolExecutor(max_workers=8) as pool:
            texts = list(
                pool.map(
                    lambda n: provider.complete([{"role": "user", "content": f"item {n}"}]).text,
                    range(24),
                )
            )

    assert texts == [str(n) for n in range(24)]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2.5"}, 2.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"Retry-After": "-4"}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_it_parses_retry_after_headers(headers, expected):
    assert parse_retry_after(headers) == expected


def test_it_treats_a_past_retry_after_date_as_now():
    assert parse_retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
