"""Small builders shared by the run and grading tests."""

from __future__ import annotations

from django.test import override_settings

from annotations.models import ModelEndpoint, Prediction, Run, RunStatus
from annotations.scoring import VLMEVAL_COMMIT
from annotations.services import runs as run_services
from tests.factories import make_benchmark, make_item

# Personas are made per test class; the default hasher would spend seconds on their passwords.
fast_passwords = override_settings(
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]
)

# Tiny backoff: retries are exercised for real, without making the suite slow.
FAST_RETRIES = {"backoff_base": 0.01, "backoff_max": 0.05, "max_retries": 3, "timeout": 5}


def make_run_benchmark(n: int = 6, family: str = "endobench", name: str | None = None, **fields):
    """A benchmark of n items with answers cycling A-D and two categories, two scenes."""
    benchmark = make_benchmark(name, family=family)
    items = [
        make_item(
            benchmark,
            index=i,
            answer="ABCD"[i % 4],
            category="Lesion" if i % 2 else "Anatomy",
            scene="colonoscopy" if i % 3 else "gastroscopy",
            **fields,
        )
        for i in range(1, n + 1)
    ]
    return benchmark, items


def make_endpoint(base_url: str, name: str = "fake-vlm", **params) -> ModelEndpoint:
    return run_services.endpoint_ensure_openai(
        name=name, base_url=base_url, model="fake-model", params={**FAST_RETRIES, **params}
    )


def make_done_run(benchmark, items, *, label: str, answers: dict[int, str], user=None) -> Run:
    """A finished run whose answer per item index is given (for grading and leaderboards)."""
    endpoint = run_services.endpoint_ensure_baseline(baseline="first")
    run = Run.objects.create(
        benchmark=benchmark,
        endpoint=endpoint,
        kind="model",
        label=label,
        vlmeval_commit=VLMEVAL_COMMIT,
        status=RunStatus.RUNNING,
        total=len(items),
        created_by=user,
    )
    for item in items:
        text = answers.get(item.source_index, "A")
        readings = run_services.prediction_readings(item=item, family=benchmark.family, text=text)
        Prediction.objects.create(run=run, item=item, raw_text=text, **readings)
    return run_services.run_finish(run_id=run.pk)


def make_report_run(benchmark, items, *, label: str, texts: list[str]) -> Run:
    """A finished model run whose reply per item is given (generated reports, for grading)."""
    endpoint = run_services.endpoint_ensure_openai(
        name=f"endpoint-of-{label}", base_url="http://127.0.0.1:9/v1", model=f"model-{label}"
    )
    run = Run.objects.create(
        benchmark=benchmark,
        endpoint=endpoint,
        kind="model",
        label=label,
        status=RunStatus.RUNNING,
        total=len(items),
    )
    for item, text in zip(items, texts, strict=False):
        Prediction.objects.create(run=run, item=item, raw_text=text, hit=None)
    return run_services.run_finish(run_id=run.pk)
