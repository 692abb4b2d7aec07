"""Token log-probabilities through the real `openai` client and the loopback fake server."""

from __future__ import annotations

import math
import random

import pytest

from annotations.inference import InferenceItem, OpenAICompatibleProvider, predict
from annotations.scoring.calibration import letter_confidence
from tests.support.fake_openai import FakeOpenAIServer, Reply

MESSAGES = [{"role": "user", "content": "Which organ?\n\nA. Liver\nB. Spleen\nC. Kidney"}]


def _provider(server: FakeOpenAIServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        server.base_url, "fake-vlm", "k", max_retries=1, timeout=5.0, rng=random.Random(0)
    )


def _script(text: str, probs: dict[str, float] | None):
    return lambda request_json, attempt_no: Reply(text=text, letter_probs=probs)


def test_asked_for_they_come_back_in_openais_shape() -> None:
    probs = {"B": 0.7, "A": 0.2, "C": 0.1}
    with FakeOpenAIServer(_script("The answer is B.", probs)) as server:
        completion = _provider(server).complete(MESSAGES, logprobs=True)
        [body] = server.requests
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    tokens = [entry["token"] for entry in completion.logprobs]
    assert tokens == ["The", " answer", " is", " B", "."]
    letter = completion.logprobs[3]
    assert letter["logprob"] == pytest.approx(math.log(0.7))
    assert [t["token"] for t in letter["top_logprobs"]] == [" B", " A", " C"]
    assert letter_confidence(completion.logprobs, "B", ["A", "B", "C"]) == pytest.approx(0.7)
    assert completion.logprobs_refused is False


def test_not_asked_for_they_are_neither_sent_nor_kept() -> None:
    with FakeOpenAIServer(_script("B", {"B": 1.0})) as server:
        completion = _provider(server).complete(MESSAGES)
        [body] = server.requests
    assert "logprobs" not in body and "top_logprobs" not in body
    assert completion.logprobs is None


def test_an_endpoint_that_refuses_is_asked_again_without_once_and_then_no_more() -> None:
    with FakeOpenAIServer(_script("A", {"A": 0.9, "B": 0.1}), logprobs="refused") as server:
        provider = _provider(server)
        first = provider.complete(MESSAGES, logprobs=True)
        second = provider.complete(MESSAGES, logprobs=True)
        bodies = server.requests
    assert first.text == "A" and first.logprobs is None and first.logprobs_refused
    assert second.logprobs_refused and second.logprobs is None
    # The refused request, the same again without, then the next one without at once.
    assert [("logprobs" in body) for body in bodies] == [True, False, False]


def test_an_endpoint_that_ignores_them_gives_none() -> None:
    with FakeOpenAIServer(_script("A", {"A": 0.9}), logprobs="absent") as server:
        completion = _provider(server).complete(MESSAGES, logprobs=True)
    assert completion.logprobs is None and not completion.logprobs_refused


def test_predict_asks_only_when_told() -> None:
    item = InferenceItem(key="k", question="Which organ?", options={"A": "Liver", "B": "Spleen"})
    with FakeOpenAIServer(_script("A", {"A": 0.6, "B": 0.4})) as server:
        provider = _provider(server)
        plain = predict(provider, item, family="medqdeg", with_image=False)
        asked = predict(provider, item, family="medqdeg", with_image=False, logprobs=True)
    assert plain.logprobs is None
    assert letter_confidence(asked.logprobs, "A", ["A", "B"]) == pytest.approx(0.6)
