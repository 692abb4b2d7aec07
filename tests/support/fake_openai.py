"""A loopback OpenAI-compatible server (chat completions and embeddings) for tests, benches, demos.

Pure standard library, so it runs anywhere the test suite runs::

    with FakeOpenAIServer(script=flaky(first_n_fail=2)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k")

Standalone (for `bench/` and manual demos)::

    python tests/support/fake_openai.py --port 8011 --latency 0.2

Each request is answered by a *script*: ``script(request_json, attempt_no) -> Reply``.
``attempt_no`` counts identical request bodies (1 for the first time a body is seen, 2 for its
first retry...), so "fail the first two attempts" works per item even under concurrency.

``/v1/embeddings`` is answered by a second script of the same form (``embeddings=``), whose
``Reply.vectors`` hold one vector per input; by default ``hashed_embeddings()``: a fixed vector
per input string, so tests can predict rankings. Chat scripts for Gastric-X's tasks:
``replay`` (fixed text per prompt or per image: reports) and ``box_answers`` (box coordinates
in the styles real models use).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeOpenAIServer",
    "Reply",
    "Script",
    "answer_letter",
    "box_answers",
    "embedding_inputs",
    "flaky",
    "hashed_embeddings",
    "hashed_vector",
    "image_digests",
    "oracle",
    "prompt_text",
    "replay",
    "sha256_hex",
    "throughput_server",
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


# --- the server -----------------------------------------------------------------------------


def _completion_body(request_json: dict[str, Any], text: str, serial: int) -> dict[str, Any]:
    # Token counts are rough but deterministic: words of text plus a flat cost per image.
    prompt_tokens = len(prompt_text(request_json).split()) + 85 * image_count(request_json)
    completion_tokens = max(1, len(text.split()))
    return {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request_json.get("model", "fake-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _embeddings_body(request_json: dict[str, Any], vectors: list[list[float]]) -> dict[str, Any]:
    def encoded(vector: list[float]) -> list[float] | str:
        if request_json.get("encoding_format") != "base64":
            return vector
        packed = b"".join(struct.pack("<f", x) for x in vector)
        return base64.b64encode(packed).decode("ascii")

    tokens = sum(len(text.split()) for text in embedding_inputs(request_json))
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": index, "embedding": encoded(vector)}
            for index, vector in enumerate(vectors)
        ],
        "model": request_json.get("model", "fake-embedder"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _error_body(status: int) -> dict[str, Any]:
    kind = "rate_limit_error" if status == 429 else "server_error" if status >= 500 else "invalid"
    return {"error": {"message": f"fake error {status}", "type": kind, "code": str(status)}}


_PATHS = {"chat": "/chat/completions", "embeddings": "/embeddings"}


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections alive, as real inference servers do; it needs Content-Length.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two sends; with Nagle's algorithm the body would wait for the
    # client's delayed ACK (~40 ms per answer). Real inference servers set TCP_NODELAY too.
    disable_nagle_algorithm = True
    server: _FakeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # keep test output clean

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.rstrip("/")
        kind = next((k for k in ("chat", "embeddings") if path.endswith(_PATHS[k])), None)
        if kind is None:
            self._send_json(404, {"error": {"message": "not found"}})
            return
        try:
            request_json = json.loads(raw)
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        owner = self.server.owner
        attempt_no, serial = owner._record(kind, raw, request_json, dict(self.headers.items()))
        script = owner.script if kind == "chat" else owner.embeddings
        owner._enter(kind)
        try:
            reply = script(request_json, attempt_no)
            # Wait on the stop event so that stopping the server does not hang on slow replies.
            owner._stopping.wait(owner.latency + reply.delay)
            self._send_reply(kind, reply, request_json, serial)
        finally:
            owner._leave(kind)

    def _send_reply(
        self, kind: str, reply: Reply, request_json: dict[str, Any], serial: int
    ) -> None:
        if reply.raw_body is not None:
            self._send_bytes(reply.status, reply.raw_body, reply.headers)
        elif reply.status >= 400:
            self._send_json(reply.status, _error_body(reply.status), reply.headers)
        elif kind == "embeddings":
            body = _embeddings_body(request_json, reply.vectors or [])
            self._send_json(reply.status, body, reply.headers)
        else:
            body = _completion_body(request_json, reply.text, serial)
            self._send_json(reply.status, body, reply.headers)

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(body).encode("utf-8"), headers or {})

    def _send_bytes(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout fired first): nothing left to tell it


class _FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # benches open many concurrent connections at once
    owner: FakeOpenAIServer


class FakeOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 (chat and embeddings), in a background thread.

    Use as a context manager. `base_url` ends in `/v1`; `requests` holds the parsed body of
    every chat request received, `request_headers` their headers (same order);
    `embedding_requests` the bodies of the embeddings requests.
    """

    def __init__(
        self,
        script: Script | None = None,
        latency: float = 0.0,
        *,
        embeddings: Script | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.script: Script = script or varied_formats
        self.embeddings: Script = embeddings or hashed_embeddings()
        self.latency = latency
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[dict[str, Any]] = []
        self._embedding_requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._embedding_headers: list[dict[str, str]] = []
        self._attempts: Counter[str] = Counter()
        self._in_flight = 0
        self._max_in_flight = 0
        self._httpd = _FakeHTTPServer((host, port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._embedding_requests)

    @property
    def embedding_request_headers(self) -> list[dict[str, str]]:
        """Headers of every embeddings request, names lower-cased."""
        with self._lock:
            return list(self._embedding_headers)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Headers of every chat request, names lower-cased."""
        with self._lock:
            return list(self._headers)

    @property
    def in_flight(self) -> int:
        """How many chat requests this server is answering now (a script may read it)."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most chat requests this server was answering at the same moment."""
        with self._lock:
            return self._max_in_flight

    def _enter(self, kind: str) -> None:
        if kind != "chat":
            return
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self, kind: str) -> None:
        if kind != "chat":
            return
        with self._lock:
            self._in_flight -= 1

    def _record(
        self, kind: str, raw: bytes, request_json: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, int]:
        key = hashlib.sha256(raw).hexdigest()
        lowered = {name.lower(): value for name, value in headers.items()}
        with self._lock:
            self._attempts[key] += 1
            if kind == "embeddings":
                self._embedding_requests.append(request_json)
                self._embedding_headers.append(lowered)
                return self._attempts[key], len(self._embedding_requests)
            self._requests.append(request_json)
            self._headers.append(lowered)
            return self._attempts[key], len(self._requests)

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def throughput_server(latency: float = 0.2, script: Script | None = None) -> FakeOpenAIServer:
    """The endpoint the run-throughput budget is measured against (200 ms per answer)."""
    return FakeOpenAIServer(script=script or answer_letter("A"), latency=latency)


_SCRIPTS: dict[str, Callable[[], Script]] = {
    "varied": lambda: varied_formats,
    "letter": lambda: answer_letter("A"),
    "flaky": lambda: flaky(first_n_fail=1, status=429, retry_after="1"),
}


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted: `python tests/support/fake_openai.py --port 8011`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each reply")
    parser.add_argument("--script", choices=sorted(_SCRIPTS), default="varied")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        _SCRIPTS[args.script](), latency=args.latency, host=args.host, port=args.port
    )
    print(f"fake OpenAI server on {server.base_url} (latency {args.latency}s)", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
