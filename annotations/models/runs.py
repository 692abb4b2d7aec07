from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from annotations.models.jobs import Leased


class EndpointKind(models.TextChoices):
    OPENAI = "openai", _("OpenAI-compatible service")
    BASELINE = "baseline", _("Built-in baseline")


class ModelEndpoint(models.Model):
    """A model to run: an OpenAI-compatible chat service or a built-in baseline.

    Its API key is read from an environment variable named with the configured prefix
    (`api_key_env`), or stored encrypted (`api_key_encrypted`, a Fernet token); never in clear.
    """

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=EndpointKind.choices)
    base_url = models.URLField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(max_length=100, blank=True)
    api_key_encrypted = models.TextField(blank=True, editable=False)
    baseline = models.CharField(max_length=20, blank=True)  # random / first / frequent
    params = models.JSONField(default=dict, blank=True)  # temperature, max_tokens, timeout
    prompt_template = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class RunKind(models.TextChoices):
    MODEL = "model", _("Model")
    BASELINE = "baseline", _("Baseline")
    HUMAN = "human", _("Human baseline")


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class Run(Leased):
    """One model (or one clinician, for a human baseline) answering a filtered set of items."""

    benchmark = models.ForeignKey(
        "annotations.Benchmark", on_delete=models.CASCADE, related_name="runs"
    )
    endpoint = models.ForeignKey(
        ModelEndpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    kind = models.CharField(max_length=20, choices=RunKind.choices)
    # An OpenAI-compatible model that reads the answers the rules cannot (optional).
    judge = models.ForeignKey(
        ModelEndpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    label = models.CharField(max_length=200)
    human = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    filters = models.JSONField(default=dict, blank=True)
    with_image = models.BooleanField(default=True)
    # Also score by our lenient readings, shown beside VLMEvalKit's score (never instead of it).
    lenient = models.BooleanField(default=False)
    # The endpoint refused token log-probabilities: its answers were asked again without them
    # and have no confidence.
    logprobs_refused = models.BooleanField(default=False)
    # The VLMEvalKit commit whose rules read this run's answers ('' for runs read before them).
    vlmeval_commit = models.CharField(max_length=40, blank=True)
    concurrency = models.PositiveSmallIntegerField(default=4)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.label


class RunChunk(Leased):
    """A slice of a run's items, answered by one task: the unit that workers share.

    The slice is a range of the items' `source_index` (inclusive) within the run's filters, so it
    is the same set whichever worker reads it. A worker claims a queued chunk with a conditional
    UPDATE (a lease), and a chunk whose worker died is put back in the queue by the reaper.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="chunks")
    number = models.PositiveIntegerField()
    first_index = models.BigIntegerField()
    last_index = models.BigIntegerField()
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    completed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="run_chunk_number_once")
        ]
        indexes = [models.Index(fields=["status", "run"], name="run_chunk_status")]

    def __str__(self) -> str:
        return f"{self.run_id}/{self.number}"


class Prediction(models.Model):
    """A run's answer to one item: exactly one per (run, item), enforced by the database.

    `extracted` and `hit` are the score: VLMEvalKit's reading of the reply, or, where its exact
    matching read nothing and the run has a judge, the judge's (as VLMEvalKit does). Beside them
    the reply's readings are all kept: VLMEvalKit's exact-matching letter, the judge's letter,
    and our lenient letter and hit (a separate score, never the main one).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="predictions")
    item = models.ForeignKey(
        "annotations.Item", on_delete=models.CASCADE, related_name="predictions"
    )
    item_version = models.PositiveIntegerField(default=1)
    raw_text = models.TextField(blank=True)
    extracted = models.CharField(max_length=1, blank=True)
    hit = models.BooleanField(null=True)
    vlmeval_letter = models.CharField(max_length=1, blank=True)  # exact matching; '' is Z
    judged_by_llm = models.BooleanField(default=False)  # `extracted` is the judge's reading
    judge_letter = models.CharField(max_length=1, blank=True)  # '' is Z
    judge_drawn = models.BooleanField(default=False)  # every judge call failed: drawn, seeded
    lenient_letter = models.CharField(max_length=1, blank=True)
    lenient_hit = models.BooleanField(null=True)
    # Per item kind (the reply itself is `raw_text`): a classification item's label, a
    # localization item's parsed box (2D pixels, or 3D voxels joined from its slices' boxes)
    # with the box read on each slice asked, a retrieval pair's embeddings and its ranks
    # within the run (set when the run is scored: they depend on every other pair).
    label = models.CharField(max_length=200, blank=True)
    box = models.JSONField(null=True, blank=True)
    slice_boxes = models.JSONField(null=True, blank=True)  # {"z": [x0, y0, x1, y1] | null}
    embedding = models.JSONField(null=True, blank=True)  # {"report": [...], "case": [...]}
    report_to_case_rank = models.PositiveIntegerField(null=True, blank=True)
    case_to_report_rank = models.PositiveIntegerField(null=True, blank=True)
    # The answer letter's probability among the options (`scoring.calibration`), from the
    # endpoint's log-probabilities; with the letters' distribution at that token, so that a
    # reply read again gets its new letter's confidence. Null without log-probabilities.
    confidence = models.FloatField(null=True, blank=True)
    letter_probs = models.JSONField(null=True, blank=True)  # {"A": 0.1, "B": 0.9}
    latency_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="prediction_once_per_run_item")
        ]
        # A human-baseline session's last answer, where its queue goes on (one index probe).
        indexes = [models.Index(fields=["run", "id"], name="prediction_run_latest")]


class GradingTask(models.TextChoices):
    ANSWERS = "", _("Every item's answers")
    REPORTS = "report_generation", _("Generated reports")


class GradingSession(models.Model):
    """A curator's request that clinicians compare two runs item by item, blinded.

    A report session compares generated reports with a report rubric; without run B it puts a
    model's reports beside the reference reports (graders are not told which is which).
    """

    run_a = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    task = models.CharField(max_length=30, choices=GradingTask.choices, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The clinicians the curator asked to grade; none (sessions made before the choice, or
    # through the API without one): every clinician in the benchmark's scope.
    graders = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="grading_sessions"
    )


class Preference(models.TextChoices):
    LEFT = "left", _("Left is better")
    RIGHT = "right", _("Right is better")
    TIE = "tie", _("Tie")
    BOTH_WRONG = "both_wrong", _("Both wrong")


class Grade(models.Model):
    """A clinician's blinded side-by-side judgement of two predictions for one item.

    The runs are recorded by side, so the preference can be turned back into run A vs run B;
    a side without a prediction is the item's reference report.
    """

    session = models.ForeignKey(GradingSession, on_delete=models.CASCADE, related_name="grades")
    item = models.ForeignKey("annotations.Item", on_delete=models.CASCADE, related_name="+")
    grader = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    left_prediction = models.ForeignKey(
        Prediction, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    right_prediction = models.ForeignKey(
        Prediction, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    preference = models.CharField(max_length=20, choices=Preference.choices)
    # {"left": {...}, "right": {...}}: answers 0-2 per criterion; reports the counts of correct
    # findings, omissions and hallucinations (0-3, 3 = three or more) and overall 1-5.
    rubric = models.JSONField(default=dict, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "item", "grader"], name="grade_once_per_grader_item"
            )
        ]
