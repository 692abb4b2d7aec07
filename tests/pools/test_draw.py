"""Drawing a benchmark from a pool, as the command does it: quotas, seeds, balance,
duplicates, excluded images, top-up after rejections, lineage."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from annotations.models import (
    Assignment,
    Benchmark,
    Draw,
    Item,
    ItemImage,
    ItemRevision,
    ItemStatus,
    RevisionReason,
)
from annotations.services.images import image_store
from annotations.services.review import assignments_create
from tests.factories import make_user
from tests.pools.world import SCENES, TASKS, make_pool, textured_jpeg

pytestmark = pytest.mark.django_db


def run_draw(*args: str) -> str:
    out = io.StringIO()
    call_command("draw_benchmark", *args, stdout=out)
    return out.getvalue()


def per_stratum(name: str) -> Counter:
    return Counter(
        Item.objects.filter(benchmark__name=name).values_list("scene", "task").order_by()
    )


def test_quotas_are_exact_per_stratum_of_a_combination():
    make_pool()
    output = run_draw("endo-pool", "drawn", "--per", "scene,task=7", "--seed", "1")
    assert per_stratum("drawn") == {(s, t): 7 for s in SCENES for t in TASKS}
    assert "drawn 42 items" in output


def test_a_quota_file_sets_each_stratum(tmp_path):
    make_pool()
    quota_file = tmp_path / "quotas.csv"
    quota_file.write_text("scene,quota\ncolonoscopy,20\ngastroscopy,3\n")
    run_draw("endo-pool", "drawn", "--quota-file", str(quota_file), "--seed", "2")
    scenes = Counter(Item.objects.filter(benchmark__name="drawn").values_list("scene", flat=True))
    assert scenes == {"colonoscopy": 20, "gastroscopy": 3}


def test_a_quota_file_naming_a_stratum_the_pool_lacks_is_refused(tmp_path):
    make_pool()
    quota_file = tmp_path / "quotas.csv"
    quota_file.write_text("scene,quota\ncolonoscopy,2\ncystoscopy,3\n")
    with pytest.raises(CommandError, match="cystoscopy"):
        run_draw("endo-pool", "drawn", "--quota-file", str(quota_file), "--seed", "2")
    assert not Benchmark.objects.filter(name="drawn").exists()


def test_the_same_seed_draws_the_same_items():
    make_pool()
    for name, seed in (("one", "5"), ("two", "5"), ("three", "6")):
        run_draw("endo-pool", name, "--per", "task=10", "--seed", seed)

    def drawn(name):
        return list(
            Item.objects.filter(benchmark__name=name)
            .order_by("source_index")
            .values_list("pool_item_id", flat=True)
        )

    assert drawn("one") == drawn("two")
    assert set(drawn("one")) != set(drawn("three"))


def test_no_two_drawn_items_share_image_and_question():
    # 3 questions per image, the third the first one in capitals: at most 2 per image.
    make_pool(images_per_stratum=4, questions_per_image=3)
    output = run_draw("endo-pool", "drawn", "--per", "scene,task=12", "--seed", "3")
    seen = Counter(
        (image_id, question.lower())
        for image_id, question in ItemImage.objects.filter(
            item__benchmark__name="drawn"
        ).values_list("image_id", "item__question")
    )
    assert max(seen.values()) == 1
    assert per_stratum("drawn") == {(s, t): 8 for s in SCENES for t in TASKS}
    assert "pool exhausted for colonoscopy / landmark" in output
    strata = Draw.objects.get(benchmark__name="drawn").strata.all()
    assert all(stratum.exhausted for stratum in strata)


def test_balanced_answers_are_within_one_per_letter_per_stratum_with_their_revision():
    make_pool(images_per_stratum=12, questions_per_image=2, answer_letter="A")
    output = run_draw(
        "endo-pool", "drawn", "--per", "scene,task=22", "--seed", "4", "--balance-answers"
    )
    drawn = Item.objects.filter(benchmark__name="drawn").select_related("pool_item")
    letters: dict[tuple, Counter] = {}
    for item in drawn:
        letters.setdefault((item.scene, item.task), Counter())[item.answer] += 1
        # The same answer, now at its new letter; the other options are all still there.
        assert item.answer_text == item.pool_item.answer_text
        assert sorted(item.options) == sorted(item.pool_item.options)
    for counts in letters.values():
        assert set(counts) == set("ABCD")
        assert max(counts.values()) - min(counts.values()) <= 1
    moved = drawn.filter(version=2)
    assert moved.exists()
    revision = ItemRevision.objects.get(item=moved.first(), version=2)
    assert revision.reason == RevisionReason.BALANCED
    assert revision.content["answer"] == moved.first().answer
    assert "answer positions balanced" in output and "before A=" in output


def test_images_of_another_benchmark_are_really_absent_by_sha256_and_perceptual_hash():
    pool = make_pool(images_per_stratum=6, questions_per_image=2)
    other = Benchmark.objects.create(name="train-set", family="endobench")
    pool_images = list(
        ItemImage.objects.filter(item__benchmark=pool)
        .order_by("image_id")
        .values_list("image_id", flat=True)
        .distinct()
    )
    same = pool_images[:5]
    for n, image_id in enumerate(same):  # the very same files
        item = Item.objects.create(benchmark=other, source_index=n, question="q", answer="A")
        ItemImage.objects.create(item=item, image_id=image_id)
    # Re-encodes of two other pool pictures: other bytes, the same look.
    seeds = [1000 * 0 + 100 * 1 + 0, 1000 * 1 + 100 * 2 + 3]
    near = []
    for n, seed in enumerate(seeds, start=100):
        stored, _ = image_store(data=textured_jpeg(seed, quality=60))
        item = Item.objects.create(benchmark=other, source_index=n, question="q", answer="A")
        ItemImage.objects.create(item=item, image=stored)
        original, _ = image_store(data=textured_jpeg(seed))
        assert stored.pk != original.pk
        near.append(original.pk)
    output = run_draw(
        "endo-pool",
        "drawn",
        "--per",
        "scene=100",
        "--seed",
        "7",
        "--exclude-images-of",
        "train-set",
    )
    drawn_images = set(
        ItemImage.objects.filter(item__benchmark__name="drawn").values_list("image_id", flat=True)
    )
    assert not drawn_images & set(same)
    assert not drawn_images & set(near)
    report = Draw.objects.get(benchmark__name="drawn").report["rounds"][0]["excluded"]
    assert report["images_by_sha256"] == 5 and report["items_by_sha256"] == 10
    assert report["images_by_phash"] == 2 and report["items_by_phash"] == 4
    assert "excluded 10 items" in output
    assert Item.objects.filter(benchmark__name="drawn").count() == 72 - 14


def test_top_up_after_rejections_restores_every_quota_with_items_never_drawn():
    make_pool(images_per_stratum=12, questions_per_image=2)
    run_draw("endo-pool", "drawn", "--per", "scene,task=6", "--seed", "8", "--balance-answers")
    drawn = Benchmark.objects.get(name="drawn")
    reviewers = [make_user("r1", "reviewer"), make_user("r2", "reviewer")]
    assignments_create(benchmark=drawn, reviewers=reviewers, per_item=2)
    first = set(Item.objects.filter(benchmark=drawn).values_list("pool_item_id", flat=True))
    rejected = list(
        Item.objects.filter(benchmark=drawn, task="lesion").values_list("pk", flat=True)[:5]
    )
    Item.objects.filter(pk__in=rejected).update(status=ItemStatus.REJECTED)
    output = run_draw("endo-pool", "drawn", "--top-up")
    assert "drawn 5 items" in output
    standing = Counter(
        Item.objects.filter(benchmark=drawn)
        .exclude(status=ItemStatus.REJECTED)
        .values_list("scene", "task")
        .order_by()
    )
    assert standing == {(s, t): 6 for s in SCENES for t in TASKS}
    new = Item.objects.filter(benchmark=drawn).exclude(pool_item_id__in=first)
    assert new.count() == 5
    # Balanced around the letters that stand: each stratum still within one per letter.
    letters: dict[tuple, Counter] = {}
    for item in Item.objects.filter(benchmark=drawn).exclude(status=ItemStatus.REJECTED):
        letters.setdefault((item.scene, item.task), Counter())[item.answer] += 1
    for counts in letters.values():
        assert max(counts.values()) - min(counts[letter] for letter in "ABCD") <= 1
    assert all(item.task == "lesion" for item in new)
    # Assigned like the rest: the same two reviewers, each new item to both.
    for item in new:
        assert set(
            Assignment.objects.filter(item=item).values_list("reviewer__username", flat=True)
        ) == {"r1", "r2"}
        assert item.status == ItemStatus.IN_REVIEW
    with pytest.raises(CommandError, match="nothing to replace"):
        run_draw("endo-pool", "drawn", "--top-up")


def test_a_draw_from_a_benchmark_that_is_not_a_pool_is_refused():
    pool = make_pool(images_per_stratum=1, questions_per_image=1)
    Benchmark.objects.filter(pk=pool.pk).update(is_pool=False)
    with pytest.raises(CommandError, match="not a pool"):
        run_draw("endo-pool", "drawn", "--per", "task=1", "--seed", "1")


def test_a_name_that_cannot_be_a_page_address_is_refused():
    make_pool(images_per_stratum=1, questions_per_image=1)
    with pytest.raises(CommandError, match="letters, digits"):
        run_draw("endo-pool", "my draw", "--per", "task=1", "--seed", "1")
    assert not Benchmark.objects.filter(name="my draw").exists()
