from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotations.models import Benchmark, Run
from annotations.services import runs as run_services
from annotations.services.errors import DomainError
from annotations.services.runs.results import run_results


class Command(BaseCommand):
    # Checks import every URL and view (scipy, SimpleITK...); `make test` and deploys run them.
    requires_system_checks: list[str] = []
    help = (
        "Run a model (OpenAI-compatible endpoint) or a baseline over benchmark NAME in this "
        "process, with a progress bar; print the run id and the overall accuracy."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="benchmark name")
        parser.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://host/v1")
        parser.add_argument("--model", help="model name sent to the endpoint")
        parser.add_argument(
            "--api-key-env", default="", help="NAME of the environment variable holding the key"
        )
        parser.add_argument("--baseline", choices=run_services.BASELINES)
        parser.add_argument("--concurrency", type=int, default=4)
        parser.add_argument("--limit", type=int, help="answer at most N items")
        parser.add_argument("--no-image", action="store_true", help="ask without the image")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--out", type=Path, help="write scores and predictions as JSON")
        parser.add_argument(
            "--lenient",
            action="store_true",
            help="also score by the lenient readings (beside VLMEvalKit's score, never instead)",
        )
        parser.add_argument(
            "--judge-base-url", help="an LLM judge for the answers the rules cannot read"
        )
        parser.add_argument("--judge-model", help="the judge's model name")
        parser.add_argument(
            "--judge-api-key-env", default="", help="NAME of the variable holding the judge's key"
        )

    def handle(self, *args, name: str, **options):
        benchmark = Benchmark.objects.filter(name=name).first()
        if benchmark is None:
            raise CommandError(f"No benchmark named {name!r}.")
        try:
            run = run_services.run_create(
                benchmark=benchmark,
                endpoint=self._endpoint(options),
                filters={"limit": options["limit"]} if options["limit"] else {},
                with_image=not options["no_image"],
                concurrency=options["concurrency"],
                seed=options["seed"],
                judge=self._judge(options),
                lenient=options["lenient"],
                enqueue=False,  # executed right here, through the same service as the worker
            )
            with tqdm(
                total=run.total,
                desc=f"run {run.pk}",
                unit=" items",
                disable=not options["verbosity"],
            ) as bar:
                run = run_services.run_execute(run_id=run.pk, progress=bar.update)
        except DomainError as error:
            raise CommandError(str(error)) from error
        overall = run.summary.get("overall", {}).get("accuracy")
        if options["out"]:
            self._write(options["out"], run)
        shown = "n/a" if overall is None else f"{overall:.4f}"
        line = f"run {run.pk}: overall accuracy {shown} ({run.completed} items)"
        if run.lenient:
            lenient = run.summary.get("lenient", {}).get("overall", {}).get("accuracy")
            line += "; lenient " + ("n/a" if lenient is None else f"{lenient:.4f}")
        self.stdout.write(line)

    def _endpoint(self, options):
        if options["baseline"]:
            if options["base_url"] or options["model"]:
                raise CommandError("Give either --baseline or --base-url/--model, not both.")
            return run_services.endpoint_ensure_baseline(baseline=options["baseline"])
        if not (options["base_url"] and options["model"]):
            raise CommandError("Give --base-url and --model (or --baseline).")
        return _openai_endpoint(options["base_url"], options["model"], options["api_key_env"])

    def _judge(self, options):
        base_url, model = options["judge_base_url"], options["judge_model"]
        if not (base_url or model):
            return None
        if not (base_url and model):
            raise CommandError("Give both --judge-base-url and --judge-model.")
        return _openai_endpoint(base_url, model, options["judge_api_key_env"])

    def _write(self, path: Path, run: Run) -> None:
        document = run_results(run)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")


def _openai_endpoint(base_url: str, model: str, api_key_env: str):
    host = urlsplit(base_url).netloc or base_url
    return run_services.endpoint_ensure_openai(
        name=f"{model}@{host}"[:100], base_url=base_url, model=model, api_key_env=api_key_env
    )
