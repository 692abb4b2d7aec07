"""A loopback OpenAI-compatible server (chat completions and embeddings) for tests, benches, demos.

Pure standard library, so it runs anywhere the test suite runs::

    with FakeOpenAIServer(script=flaky(first_n_fail=2)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k")

Standalone (for `bench/` and manual demos)::

    python -m tests.support.fake_openai --port 8011 --latency 0.2

Each request is answered by a *script*: ``script(request_json, attempt_no) -> Reply``.
``attempt_no`` counts identical request bodies (1 for the first time a body is seen, 2 for its
first retry...), so "fail the first two attempts" works per item even under concurrency.

``/v1/embeddings`` is answered by a second script of the same form (``embeddings=``), whose
``Reply.vectors`` hold one vector per input; by default ``hashed_embeddings()``: a fixed vector
per input string, so tests can predict rankings. Chat scripts for Gastric-X's tasks:
``replay`` (fixed text per prompt or per image: reports) and ``box_answers`` (box coordinates
in the styles real models use); the scripts live in `tests.support.fake_scripts` and are
importable from here.

Log-probabilities: a chat request with `logprobs: true` gets `choices[0].logprobs.content` in
OpenAI's shape (one entry per token: `token`, `logprob`, `bytes`, `top_logprobs` cut to the
request's `top_logprobs`), built from the reply's text and its `Reply.letter_probs`. The
server's `logprobs` mode: `"given"` (default), `"absent"` (`logprobs: null`, as servers that
ignore the parameter) or `"refused"` (HTTP 400 for any request asking for them).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.fake_scripts import (  # re-exported: tests import every script from here
    BOX_STYLES,
    Reply,
    Script,
    answer_letter,
    box_answers,
    embedding_inputs,
    extract_question,
    flaky,
    hashed_embeddings,
    hashed_vector,
    image_count,
    image_digests,
    option_letters,
    oracle,
    prompt_text,
    replay,
    sha256_hex,
    varied_formats,
)

__all__ = [
    "BOX_STYLES",
    "FakeOpenAIServer",
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
    "throughput_server",
    "varied_formats",
]


# --- the server -----------------------------------------------------------------------------


_TOKEN = re.compile(r"\s*[A-Za-z0-9]+|\s*[^\sA-Za-z0-9]")


def _entry(token: str, logprob: float, top: list[tuple[str, float]]) -> dict[str, Any]:
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode("utf-8")),
        "top_logprobs": [
            {"token": t, "logprob": lp, "bytes": list(t.encode("utf-8"))} for t, lp in top
        ],
    }


def token_logprobs(
    text: str, letter_probs: dict[str, float] | None, top_n: int
) -> list[dict[str, Any]]:
    """`logprobs.content` for `text`: every token certain (log-probability 0), except the first
    lone upper-case letter, whose top list holds `letter_probs` (same leading white space)."""
    content = []
    placed = False
    for token in _TOKEN.findall(text):
        letter = token.strip()
        if letter_probs and not placed and len(letter) == 1 and letter.isupper():
            placed = True
            space = token[: len(token) - len(token.lstrip())]
            ranked = sorted(letter_probs.items(), key=lambda pair: -pair[1])
            top = [(space + t, math.log(p)) for t, p in ranked if p > 0]
            chosen = letter_probs.get(letter)
            logprob = math.log(chosen) if chosen else -20.0
            content.append(_entry(token, logprob, top[:top_n]))
        else:
            content.append(_entry(token, 0.0, [(token, 0.0)][:top_n]))
    return content


def _completion_body(
    request_json: dict[str, Any], reply: Reply, serial: int, logprobs_mode: str = "given"
) -> dict[str, Any]:
    text = reply.text
    logprobs = None
    if request_json.get("logprobs") and logprobs_mode == "given":
        top_n = int(request_json.get("top_logprobs") or 0)
        content = reply.logprobs
        if content is None:
            content = token_logprobs(text, reply.letter_probs, top_n)
        logprobs = {"content": content, "refusal": None}
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
                "logprobs": logprobs,
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
        if kind == "chat" and request_json.get("logprobs") and owner.logprobs == "refused":
            self._send_json(400, {"error": {"message": "logprobs are not supported", "code": 400}})
            return
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
            body = _completion_body(request_json, reply, serial, self.server.owner.logprobs)
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
        logprobs: str = "given",
    ) -> None:
        if logprobs not in ("given", "absent", "refused"):
            raise ValueError(f"logprobs mode {logprobs!r}: given, absent or refused")
        self.logprobs = logprobs
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
    """Serve until interrupted: `python -m tests.support.fake_openai --port 8011`."""
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
