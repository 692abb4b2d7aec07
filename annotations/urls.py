from __future__ import annotations

from django.urls import path

from annotations.views import adjudication as adjudication_views
from annotations.views import agreement as agreement_views
from annotations.views import benchmark_settings as settings_views
from annotations.views import benchmarks as benchmark_views
from annotations.views import cases as case_views
from annotations.views import core, imports, item_edit
from annotations.views import grading as grading_views
from annotations.views import human_baseline as baseline_views
from annotations.views import jobs as job_views
from annotations.views import pairs as pair_views
from annotations.views import pools as pool_views
from annotations.views import releases as release_views
from annotations.views import review as review_views
from annotations.views import run_calibration as run_calibration_views
from annotations.views import runs as run_views
from annotations.views import triage as triage_views
from annotations.views import volumes as volume_views

urlpatterns = [
    path("", core.dashboard, name="dashboard"),
    path("benchmarks/import/", imports.benchmark_import, name="benchmark-import"),
    path("benchmarks/<slug:name>/", benchmark_views.benchmark_hub, name="benchmark"),
    path("benchmarks/<slug:name>/pool/", pool_views.pool_set, name="pool-set"),
    path(
        "benchmarks/<slug:name>/settings/",
        settings_views.benchmark_settings,
        name="benchmark-settings",
    ),
    path("benchmarks/<slug:name>/draw/", pool_views.pool_draw, name="pool-draw"),
    path("benchmarks/<slug:name>/top-up/", pool_views.draw_top_up, name="draw-top-up"),
    path("jobs/", job_views.job_list, name="jobs"),
    path("jobs/<int:pk>/", imports.job_detail, name="job"),
    path(
        "jobs/<str:source>/<int:pk>/retry/",
        job_views.job_retry,
        name="background-retry",
    ),
    path("items/<int:pk>/", core.item_detail, name="item"),
    path("items/<int:pk>/edit/", item_edit.item_edit, name="item-edit"),
    path("images/<str:sha256>", core.image_file, name="image"),
    path("healthz", core.health, name="health"),
    path("pairs/", pair_views.pair_list, name="pairs"),
    path("pairs/blind/", pair_views.pair_blind_toggle, name="pairs-blind"),
    path(
        "benchmarks/<slug:name>/pairs-blind/",
        pair_views.pair_blind_set,
        name="benchmark-pairs-blind",
    ),
    path("pairs/next/", pair_views.pair_next, name="pair-next"),
    path("pairs/<int:pk>/", pair_views.pair_review, name="pair-review"),
    path("pairs/<int:pk>/withdraw/", pair_views.pair_withdraw, name="pair-withdraw"),
    path(
        "benchmarks/<slug:name>/degrade/",
        pair_views.benchmark_degrade,
        name="benchmark-degrade",
    ),
    path(
        "benchmarks/<slug:name>/robustness/",
        pair_views.robustness_detail,
        name="robustness",
    ),
    path("triage/", triage_views.triage_list, name="triage-index"),
    path("benchmarks/<slug:name>/triage/", triage_views.triage_detail, name="triage"),
    path(
        "benchmarks/<slug:name>/triage/recompute/",
        triage_views.triage_recompute,
        name="triage-recompute",
    ),
    path(
        "benchmarks/<slug:name>/triage/suspects-first/",
        triage_views.triage_suspects_first,
        name="triage-suspects-first",
    ),
    path("runs/", run_views.run_list, name="runs"),
    path("runs/new/", run_views.run_create, name="run-create"),
    path("runs/<int:pk>/", run_views.run_detail, name="run"),
    path("runs/<int:pk>/cancel/", run_views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/retry/", run_views.run_retry, name="run-retry"),
    path("runs/<int:pk>/rescore/", run_views.run_rescore, name="run-rescore"),
    path(
        "runs/<int:pk>/calibration.csv",
        run_calibration_views.run_calibration_csv,
        name="run-calibration-csv",
    ),
    path("runs/<int:pk>/cliffs.csv", run_calibration_views.run_cliffs_csv, name="run-cliffs-csv"),
    path("runs/<int:pk>/results.json", run_calibration_views.run_results_json, name="run-results"),
    path("runs/<int:pk>/cliffs/", run_calibration_views.run_cliff_items, name="run-cliff-items"),
    path("runs/<int:pk>/compare/", run_calibration_views.run_compare, name="run-compare"),
    path("runs/<int:pk>/reassign/", baseline_views.baseline_reassign, name="baseline-reassign"),
    path("benchmarks/<slug:name>/leaderboard/", run_views.leaderboard_detail, name="leaderboard"),
    path("grading/", grading_views.grading_list, name="grading"),
    path("grading/new/", grading_views.grading_session_create, name="grading-create"),
    path("grading/ratings/", grading_views.grading_ratings, name="grading-ratings"),
    path("grading/<int:pk>/", grading_views.grade_item, name="grade"),
    path("cases/", case_views.case_list, name="cases"),
    path("cases/<int:pk>/", case_views.case_detail, name="case"),
    path("benchmarks/<slug:name>/cases/", case_views.case_list, name="benchmark-cases"),
    path("volumes/<int:pk>/slices/<int:z>.png", volume_views.volume_slice_png, name="volume-slice"),
    path("volumes/<int:pk>/voxels", volume_views.volume_voxels, name="volume-voxels"),
    path(
        "volumes/<int:pk>/slices/<int:z>.i16",
        volume_views.volume_slice_voxels,
        name="volume-slice-voxels",
    ),
    path("volumes/<int:pk>/chunks/<int:index>.i16", volume_views.volume_chunk, name="volume-chunk"),
    path("review/", review_views.review_queue, name="review-queue"),
    path("review/items/<int:pk>/", review_views.review_item, name="review-item"),
    path(
        "review/items/<int:pk>/withdraw/",
        review_views.review_withdraw,
        name="review-withdraw",
    ),
    path("items/<int:pk>/history/", adjudication_views.item_history, name="item-history"),
    path("adjudication/", adjudication_views.adjudication_list, name="adjudication"),
    path("adjudication/items/<int:pk>/", adjudication_views.adjudication_item, name="adjudicate"),
    path("benchmarks/<slug:name>/assign/", review_views.review_assign, name="review-assign"),
    path("agreement/", agreement_views.agreement_list, name="agreement-index"),
    path("benchmarks/<slug:name>/agreement/", agreement_views.agreement_detail, name="agreement"),
    path("baseline/", baseline_views.baseline_list, name="baseline-list"),
    path("baseline/<int:pk>/", baseline_views.baseline_answer, name="baseline"),
    path(
        "benchmarks/<slug:name>/human-baseline/", baseline_views.baseline_open, name="baseline-open"
    ),
    path("releases/", release_views.release_list, name="releases"),
    path("releases/<int:pk>/", release_views.release_detail, name="release"),
    path("releases/<int:pk>/retry/", release_views.release_retry, name="release-retry"),
    path("releases/<int:pk>/diff/", release_views.release_diff, name="release-diff"),
    path("releases/<int:pk>/archive.zip", release_views.release_archive, name="release-archive"),
    path(
        "releases/<int:pk>/files/<str:filename>",
        release_views.release_download,
        name="release-file",
    ),
    path(
        "benchmarks/<slug:name>/releases/",
        release_views.release_list,
        name="benchmark-releases",
    ),
    path("benchmarks/<slug:name>/releases/new/", release_views.release_new, name="release-new"),
]
