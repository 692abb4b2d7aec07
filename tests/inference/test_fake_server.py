"""The loopback fake server other suites rely on must itself behave as documented."""

from __future__ import annotations

import base64
import io
import json
import math
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

from annotations.inference import build_mcq_prompt, build_medqdeg_prompt, build_messages
from annotations.inference.boxparse import parse_box
from tests.support.fake_openai import (
    BOX_STYLES,
    FakeOpenAIServer,
    Reply,
    box_answers,
    extract_question,
    flaky,
    hashed_embeddings,
    hashed_vector,
    oracle,
    replay,
    sha256_hex,
    varied_formats,
)

OPTIONS = {"A": "Polyp", "B": "Ulcer", "C": "Erosion", "D": "Normal"}


def post_json(server: FakeOpenAIServer, path: str, body: dict) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(
        f"{server.base_url}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def post_chat(server: FakeOpenAIServer, content) -> tuple[int, dict[str, str], bytes]:
    return post_json(
        server,
        "/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": content}]},
    )


def answer_of(server: FakeOpenAIServer, content) -> str:
    status, _, payload = post_chat(server, content)
    assert status == 200
    return json.loads(payload)["choices"][0]["message"]["content"]


def png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (6, 6), shade).save(buffer, format="PNG")
    return buffer.getvalue()


def image_content(prompt: str, image: bytes):
    return build_messages(prompt, [image])[0]["content"]


def test_it_answers_a_chat_completion_with_usage():
    with FakeOpenAIServer(
        lambda request_json, attempt_no: Reply(text="The answer is B.")
    ) as server:
        status, _, payload = post_chat(server, "one two three")

    body = json.loads(payload)
    assert status == 200
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "The answer is B."}
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def test_flaky_counts_attempts_per_request_body():
    with FakeOpenAIServer(flaky(first_n_fail=1, status=429, retry_after="2")) as server:
        first_a = post_chat(server, "item a")
        first_b = post_chat(server, "item b")
        second_a = post_chat(server, "item a")

    assert first_a[0] == 429 and first_a[1]["Retry-After"] == "2"
    assert first_b[0] == 429
    assert second_a[0] == 200


def test_it_sends_a_raw_body_verbatim():
    with FakeOpenAIServer(lambda request_json, attempt_no: Reply(raw_body=b"{not json")) as server:
        status, _, payload = post_chat(server, "q")

    assert (status, payload) == (200, b"{not json")


def test_varied_formats_answers_in_several_styles_and_repeats_itself():
    prompts = [build_mcq_prompt(f"Finding number {n}?", OPTIONS) for n in range(40)]
    with FakeOpenAIServer(varied_formats) as server:
        answers = [answer_of(server, prompt) for prompt in prompts]
        again = [answer_of(server, prompt) for prompt in prompts]

    assert answers == again
    assert any(answer in {"A", "B", "C", "D"} for answer in answers)
    assert any(answer.startswith("The answer is ") for answer in answers)
    assert any(answer.startswith("**") for answer in answers)
    assert any(answer.startswith("(") and ") " in answer for answer in answers)
    assert any("cannot determine" in answer for answer in answers)


def test_oracle_is_right_at_about_the_requested_rate_and_stable():
    gold = {f"Question {n}?": "ABCD"[n % 4] for n in range(200)}
    script = oracle(gold, accuracy=0.7, seed=3)
    with FakeOpenAIServer(script) as server:
        answers = {q: answer_of(server, build_mcq_prompt(q, OPTIONS)) for q in gold}
        repeated = answer_of(server, build_mcq_prompt("Question 5?", OPTIONS))

    correct = sum(answers[q] == gold[q] for q in gold)
    assert 120 <= correct <= 160
    assert repeated == answers["Question 5?"]
    assert set(answers.values()) <= {"A", "B", "C", "D"}


def test_oracle_finds_the_question_in_medqdeg_and_custom_prompts():
    script = oracle({"Is this CT?": "B"}, accuracy=1.0)
    with FakeOpenAIServer(script) as server:
        medqdeg = answer_of(server, build_medqdeg_prompt("Is this CT?", {"A": "No", "B": "Yes"}))
        custom = answer_of(server, "Look closely. Is this CT? Reply A or B.")
        unknown = answer_of(server, build_mcq_prompt("Never asked?", OPTIONS))

    assert (medqdeg, custom) == ("B", "B")
    assert "cannot determine" in unknown


def test_extract_question_reads_both_prompt_styles():
    assert extract_question(build_mcq_prompt("Where?", OPTIONS, hint="h")) == "Where?"
    assert extract_question(build_medqdeg_prompt("Which one?", OPTIONS)) == "Which one?"


def test_it_serves_concurrent_requests_in_parallel():
    # Every handler waits until all ten are in flight: a serial server would break the barrier.
    barrier = threading.Barrier(10)

    def rendezvous(request_json, attempt_no):
        barrier.wait(timeout=10)
        return Reply(text="A")

    with FakeOpenAIServer(rendezvous) as server, ThreadPoolExecutor(max_workers=10) as pool:
        statuses = list(pool.map(lambda n: post_chat(server, f"q{n}")[0], range(10)))

    assert statuses == [200] * 10
    assert not barrier.broken
    assert len(server.requests) == 10


def test_it_answers_404_elsewhere():
    with FakeOpenAIServer() as server:
        request = urllib.request.Request(f"{server.base_url}/completions", data=b"{}")
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5)

    assert caught.value.code == 404


def test_it_runs_standalone_from_the_command_line():
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_openai", "--port", "0", "--script", "letter"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        banner = process.stdout.readline()
        base_url = banner.split()[4]
        request = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(
                {"model": "m", "messages": [{"role": "user", "content": "q"}]}
            ).encode(),
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            body = json.loads(response.read())
    finally:
        process.terminate()
        process.wait(timeout=5)

    assert banner.startswith("fake OpenAI server on http://127.0.0.1:")
    assert body["choices"][0]["message"]["content"] == "A"


def test_replay_answers_by_prompt_then_by_image_then_by_default():
    ct, endoscopy = png(10), png(200)
    script = replay(
        {"Write the CT report": "Wall thickening in the antrum.", "exact prompt": "exact"},
        by_image={sha256_hex(endoscopy): "Ulcer on the lesser curvature."},
        default="no report",
    )
    with FakeOpenAIServer(script) as server:
        exact = answer_of(server, "exact prompt")
        contained = answer_of(server, image_content("Please Write the CT report now.", ct))
        by_image = answer_of(server, image_content("Write the endoscopy report.", endoscopy))
        unknown = answer_of(server, image_content("Write the endoscopy report.", ct))

    assert exact == "exact"
    assert contained == "Wall thickening in the antrum."
    assert by_image == "Ulcer on the lesser curvature."
    assert unknown == "no report"


@pytest.mark.parametrize("style", sorted(BOX_STYLES))
def test_box_answers_speak_every_style_our_parser_reads_back(style):
    image = png(50)
    script = box_answers({sha256_hex(image): (12, 30, 80, 95.5)}, style=style)
    with FakeOpenAIServer(script) as server:
        reply = answer_of(server, image_content("Locate the tumor.", image))

    assert parse_box(reply, width=512, height=512).box == (12, 30, 80, 95.5)


def test_box_answers_rotate_styles_and_say_none_without_a_box():
    images = [png(shade) for shade in range(0, 250, 10)]
    table = {sha256_hex(image): (1, 2, 3, 4) for image in images}
    table[sha256_hex(images[0])] = None
    with FakeOpenAIServer(box_answers(table)) as server:
        replies = [answer_of(server, image_content("Locate.", image)) for image in images]
        unknown = answer_of(server, image_content("Locate.", png(255)))

    assert replies[0] == "none" and unknown == "none"
    assert len(set(replies[1:])) >= 4
    with pytest.raises(ValueError):
        box_answers({}, style="bogus")


def test_it_answers_embeddings_with_one_fixed_unit_vector_per_input():
    with FakeOpenAIServer() as server:
        status, _, payload = post_json(
            server,
            "/embeddings",
            {"model": "e", "input": ["gastric wall", "antrum", "gastric wall"]},
        )
        [request] = server.embedding_requests

    body = json.loads(payload)
    vectors = [item["embedding"] for item in body["data"]]
    assert status == 200 and body["object"] == "list"
    assert [item["index"] for item in body["data"]] == [0, 1, 2]
    assert vectors[0] == vectors[2] == hashed_vector("gastric wall")
    assert vectors[0] != vectors[1]
    assert math.isclose(sum(x * x for x in vectors[1]), 1.0)
    assert body["usage"] == {"prompt_tokens": 5, "total_tokens": 5}
    assert request["input"] == ["gastric wall", "antrum", "gastric wall"]
    assert server.requests == []


def test_embeddings_can_share_a_vector_by_key_and_come_as_base64():
    script = hashed_embeddings(dimensions=4, key_of=lambda text: text.split(":")[0])
    with FakeOpenAIServer(embeddings=script) as server:
        _, _, payload = post_json(
            server,
            "/embeddings",
            {"model": "e", "input": "case7:report", "encoding_format": "base64"},
        )
        _, _, plain = post_json(server, "/embeddings", {"model": "e", "input": "case7:image"})

    encoded = json.loads(payload)["data"][0]["embedding"]
    decoded = struct.unpack("<4f", base64.b64decode(encoded))
    assert decoded == pytest.approx(hashed_vector("case7", 4), rel=1e-6)
    assert json.loads(plain)["data"][0]["embedding"] == hashed_vector("case7", 4)


def test_embeddings_scripts_fail_and_recover_like_chat_scripts():
    with FakeOpenAIServer(embeddings=flaky(first_n_fail=1, status=503)) as server:
        first = post_json(server, "/embeddings", {"model": "e", "input": ["a"]})
        second = post_json(server, "/embeddings", {"model": "e", "input": ["a"]})

    assert first[0] == 503
    assert second[0] == 200 and json.loads(second[2])["data"] == []
