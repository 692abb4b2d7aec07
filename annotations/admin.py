from __future__ import annotations

from django.contrib import admin

from annotations import models


class ReadOnly:
    """Reviewed and curated content changes only through the app's pages and services, which keep
    its revisions, history and immutability; the admin shows it and writes nothing. The same holds
    for what is imported (cases, images, volumes), what the queues count (assignments) and what
    scores are made of (runs, predictions, grades). Benchmarks, model endpoints and users stay
    editable: settings, not content."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(models.Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("name", "family", "created_at")
    list_filter = ("family",)
    search_fields = ("name",)
    # What letters and answers mean (label sets, option letters, columns, taxonomy) is set by
    # the import and read by every run and release: never edited here, silently and without a
    # revision; they change on the benchmark's settings page (services/benchmark_settings.py).
    # Only the description and the pair blinding are settings of the admin.
    readonly_fields = (
        "name", "family", "taxonomy", "columns", "option_letters", "label_sets",
        "item_count", "settings_version", "created_by", "created_at",
    )  # fmt: skip

    def has_add_permission(self, request) -> bool:
        return False  # a benchmark is made by an import


@admin.register(models.BenchmarkRevision)
class BenchmarkRevisionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("benchmark", "version", "setting", "author", "created_at")
    list_filter = ("benchmark",)


class IndicatorInline(ReadOnly, admin.TabularInline):
    model = models.Indicator
    extra = 0


@admin.register(models.Case)
class CaseAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("case_id", "benchmark", "tnm")
    list_filter = ("benchmark",)
    search_fields = ("case_id",)
    inlines = [IndicatorInline]
    raw_id_fields = ("endoscopy_image",)


@admin.register(models.Image)
class ImageAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("sha256", "format", "width", "height", "size_bytes")
    search_fields = ("sha256",)


@admin.register(models.Volume)
class VolumeAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("case", "phase", "size_x", "size_y", "size_z")
    list_filter = ("phase",)


class ItemImageInline(ReadOnly, admin.TabularInline):
    model = models.ItemImage
    extra = 0
    raw_id_fields = ("image",)


class ItemRevisionInline(ReadOnly, admin.TabularInline):
    model = models.ItemRevision
    extra = 0


@admin.register(models.Item)
class ItemAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("source_index", "benchmark", "category", "status", "version")
    list_filter = ("benchmark", "status", "split", "modality")
    search_fields = ("question",)
    raw_id_fields = ("case", "clean_twin")
    inlines = [ItemImageInline, ItemRevisionInline]
    list_select_related = ("benchmark",)


@admin.register(models.ItemRevision)
class ItemRevisionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("item", "version", "reason", "author", "created_at")
    list_filter = ("reason",)
    list_select_related = ("item", "author")


@admin.register(models.Box)
class BoxAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("id", "label", "volume", "image", "state", "version")
    list_filter = ("label", "state")
    raw_id_fields = ("image", "volume", "item")


@admin.register(models.BoxRevision)
class BoxRevisionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("box", "version", "label", "state", "reason", "author", "created_at")
    list_filter = ("reason", "state")


@admin.register(models.Assignment)
class AssignmentAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("item", "reviewer", "slot", "completed_at")
    raw_id_fields = ("item",)


@admin.register(models.Review)
class ReviewAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("item", "reviewer", "item_version", "verdict", "reason", "created_at")
    list_filter = ("verdict", "reason")
    raw_id_fields = ("item",)


@admin.register(models.Adjudication)
class AdjudicationAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("item", "adjudicator", "choice", "created_at")
    raw_id_fields = ("item", "review_a", "review_b")


@admin.register(models.ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "model", "base_url", "api_key_env")


@admin.register(models.Run)
class RunAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("label", "benchmark", "kind", "status", "completed", "total")
    list_filter = ("status", "kind")


@admin.register(models.Prediction)
class PredictionAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("run", "item", "extracted", "hit", "latency_ms")
    raw_id_fields = ("item", "run")


@admin.register(models.GradingSession)
class GradingSessionAdmin(ReadOnly, admin.ModelAdmin):
    pass


@admin.register(models.Grade)
class GradeAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("session", "item", "grader", "preference")
    raw_id_fields = ("item", "left_prediction", "right_prediction")


@admin.register(models.Release)
class ReleaseAdmin(ReadOnly, admin.ModelAdmin):
    list_display = ("name", "version", "benchmark", "status", "item_count", "published_at")
