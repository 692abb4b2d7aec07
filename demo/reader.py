"""The demo's simulated vision-language model: it knows the demo's questions, but must see the image.

`DemoReader` answers OpenAI-style chat messages in process, with token log-probabilities, so
that `seed_demo` can run a model over `medqdeg-demo` without a network. It knows the right
answer to every demo question (the demo's world is small), but only answers from it when it
can *see* the image: it estimates the image's noise level from the pixels it is sent (the
median absolute second difference, a standard robust estimator of white-noise sigma) and the
chance of reading the image falls off steeply above a noise it tolerates. Unreadable images get
a guess, stated with nearly the same confidence: the over-confidence and the collapse at severe
degradation (a cliff) that MedQ-DEG's card describes come from what the reader is shown, not
from the item's labels. Every draw is seeded by the image's and the prompt's bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import math
import re
import time
from typing import Any

import numpy as np
from PIL import Image

from annotations.inference import Completion
from demo.medqdeg import _QUESTIONS

# Noise (in 8-bit grey levels) the reader still reads through, and how sharply it stops.
TOLERATED_NOISE = 14.0
NOISE_SOFTNESS = 2.0
SLIPS = 0.06  # images it sees but still misreads
_OPTION = re.compile(r"^([A-E])\. (.*)$", re.MULTILINE)
_ANSWERS = {question: answer for specs in _QUESTIONS.values() for question, answer, _d in specs}


def noise_sigma(pixels: np.ndarray) -> float:
    """White-noise sigma from the median absolute horizontal second difference (robust to
    edges: most pixels of a medical image lie in smooth regions)."""
    grey = pixels.astype(np.float64)
    if grey.ndim == 3:
        grey = grey.mean(axis=2)
    if grey.shape[1] < 3:
        return 0.0
    second = grey[:, 2:] - 2 * grey[:, 1:-1] + grey[:, :-2]
    return float(np.median(np.abs(second)) / 0.6745 / math.sqrt(6))


def _images(messages: list[dict[str, Any]]) -> list[bytes]:
    found = []
    for message in messages:
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            url = (part.get("image_url") or {}).get("url", "") if isinstance(part, dict) else ""
            if url.startswith("data:") and "," in url:
                found.append(base64.b64decode(url.split(",", 1)[1]))
    return found


def _prompt(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p.get("text", "") for p in content or () if isinstance(p, dict)]
    return "\n".join(parts)


def _draw(*keys: bytes | str) -> float:
    digest = hashlib.sha256(b"|".join(k.encode() if isinstance(k, str) else k for k in keys))
    return int.from_bytes(digest.digest()[:8], "big") / 2**64


def _content(said: str, letters: list[str], confidence: float, text: str) -> list[dict[str, Any]]:
    """`logprobs.content`: the letter's token carries every option letter in its top list."""
    rest = (1.0 - confidence) / max(1, len(letters) - 1)
    top = [{"token": said, "logprob": math.log(confidence)}] + [
        {"token": letter, "logprob": math.log(rest)} for letter in letters if letter != said
    ]
    words = text.split(said, 1)
    tokens = [{"token": w, "logprob": 0.0, "top_logprobs": [{"token": w, "logprob": 0.0}]}
              for w in words[0].split(" ") if w]  # fmt: skip
    tokens.append({"token": said, "logprob": math.log(confidence), "top_logprobs": top})
    return tokens


class DemoReader:
    """Answers chat messages like an OpenAI-compatible vision model (see the module docstring)."""

    gives_logprobs = True

    def complete(self, messages: list[dict[str, Any]], *, logprobs: bool = False) -> Completion:
        started = time.perf_counter()
        prompt = _prompt(messages)
        options = dict(_OPTION.findall(prompt))
        letters = sorted(options)
        question = prompt.split("\n\n", 1)[0].strip()
        answer = _ANSWERS.get(question)
        right = next((letter for letter, text in options.items() if text == answer), None)
        images = _images(messages)
        sigma = max(
            (noise_sigma(np.asarray(Image.open(io.BytesIO(d)).convert("L"))) for d in images),
            default=math.inf,
        )
        key = b"".join(images) + prompt.encode()
        sees = _draw(key, "sees") < 1 / (1 + math.exp((sigma - TOLERATED_NOISE) / NOISE_SOFTNESS))
        if right is not None and sees and _draw(key, "slip") >= SLIPS:
            said, confidence = right, 0.80 + 0.18 * _draw(key, "sure")
        else:
            said = letters[int(_draw(key, "guess") * len(letters))] if letters else "A"
            confidence = 0.55 + 0.35 * _draw(key, "sure")
        text = said if _draw(key, "style") < 0.5 else f"The answer is {said}."
        return Completion(
            text=text,
            latency_ms=(time.perf_counter() - started) * 1000,
            logprobs=_content(said, letters or [said], confidence, text) if logprobs else None,
        )
