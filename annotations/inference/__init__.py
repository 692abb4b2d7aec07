"""Pure inference layer: prompts, model providers and baselines (no Django imports)."""

from __future__ import annotations

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
from annotations.inference.providers import (
    ChatProvider,
    OpenAICompatibleProvider,
    build_prompt,
    predict,
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
    "build_mcq_prompt",
    "build_medqdeg_prompt",
    "build_messages",
    "build_prompt",
    "predict",
    "render_template",
]
