from __future__ import annotations

import pytest
from django.urls import reverse

from annotations.models import Assignment, ItemStatus, Review
from annotations.services.pair_review import degraded_side

pytestmark = pytest.mark.django_db

ANSWER = {"answerable": "yes", "realism": "4", "severity_judgement": "right", "comment": "ok"}


def submit(client, twin, **changes):
    data = {"version": twin.version, **ANSWER, **changes}
    return client.post(reverse("pair-review", args=[twin.pk]), data)


def test_the_pair_page_shows_clean_and_degraded_side_by_side(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    response = client.get(reverse("pair-review", args=[twins[0].pk]))
    assert response.status_code == 200
    html = response.content.decode()
    clean_sha = twins[0].clean_twin.item_images.get().image.sha256
    degraded_sha = twins[0].item_images.get().image.sha256
    assert html.index(clean_sha) < html.index(degraded_sha)  # clean on the left when not blinded
    assert "Degraded image" in html and "Gaussian blur" in html


def test_the_pair_page_runs_a_constant_number_of_queries(
    client, people, paired, django_assert_num_queries
):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    # session, user, roles, assignment+item+clean twin, both images, own review, progress
    for twin in (twins[0], twins[3]):
        with django_assert_num_queries(8):
            client.get(reverse("pair-review", args=[twin.pk]))


def test_blinded_pages_never_say_which_side_is_degraded(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    client.post(reverse("pairs-blind"), {"blinded": "1"})
    twin = twins[0]
    html = client.get(reverse("pair-review", args=[twin.pk])).content.decode()
    assert "Degraded image" not in html and "Clean image" not in html
    assert "Which image is degraded?" in html
    degraded_sha = twin.item_images.get().image.sha256
    clean_sha = twin.clean_twin.item_images.get().image.sha256
    side = degraded_side(item_id=twin.pk, reviewer_id=people["reviewer"].pk)
    first, second = (degraded_sha, clean_sha) if side == "left" else (clean_sha, degraded_sha)
    assert html.index(first) < html.index(second)


def test_submitting_a_pair_review_records_it_and_moves_to_the_next_pair(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    response = submit(client, twins[0], seconds_spent="12.5")
    assert response.status_code == 302
    assert response.url == reverse("pair-next") + "?after=" + str(
        Assignment.objects.get(item=twins[0], reviewer=people["reviewer"]).pk
    )
    review = Review.objects.get(item=twins[0], reviewer=people["reviewer"])
    assert (review.verdict, review.answerable, review.realism) == ("accept", True, 4)
    assert (review.severity_judgement, review.comment, review.seconds_spent) == (
        "right",
        "ok",
        12.5,
    )
    follow = client.get(response.url)
    assert follow.url == reverse("pair-review", args=[twins[1].pk])


def test_a_blinded_review_records_the_guess_and_the_true_side(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    client.post(reverse("pairs-blind"), {"blinded": "1"})
    assert submit(client, twins[0]).status_code == 400  # the side must be given first
    submit(client, twins[0], identified_side="left")
    review = Review.objects.get(item=twins[0])
    assert review.identified_degraded_side == "left"
    assert review.degraded_side == degraded_side(
        item_id=twins[0].pk, reviewer_id=people["reviewer"].pk
    )


def test_two_agreeing_pair_reviews_agree_and_a_realism_gap_disputes(client, people, paired):
    _benchmark, twins = paired
    for person in ("reviewer", "reviewer2"):
        client.force_login(people[person])
        submit(client, twins[0])
        submit(client, twins[1], realism="5" if person == "reviewer" else "2")
    twins[0].refresh_from_db()
    twins[1].refresh_from_db()
    assert twins[0].status == ItemStatus.AGREED
    assert twins[1].status == ItemStatus.DISPUTED


def test_both_saying_unanswerable_rejects_the_twin(client, people, paired):
    _benchmark, twins = paired
    for person in ("reviewer", "reviewer2"):
        client.force_login(people[person])
        submit(client, twins[2], answerable="no", severity_judgement="too_strong")
    twins[2].refresh_from_db()
    assert twins[2].status == ItemStatus.REJECTED
    assert set(Review.objects.filter(item=twins[2]).values_list("reason", flat=True)) == {
        "unanswerable"
    }


def test_an_incomplete_answer_is_refused_and_stores_nothing(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    response = submit(client, twins[0], realism="")
    assert response.status_code == 400
    assert "Score the realism" in response.content.decode()
    assert not Review.objects.exists()


def test_a_stale_version_is_refused(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    response = submit(client, twins[0], version=twins[0].version + 1)
    assert response.status_code == 400
    assert not Review.objects.exists()


def test_a_reviewer_without_the_assignment_gets_404(client, people, paired):
    _benchmark, twins = paired
    from tests.factories import make_user

    stranger = make_user("frank", "reviewer")
    client.force_login(stranger)
    assert client.get(reverse("pair-review", args=[twins[0].pk])).status_code == 404
    assert submit(client, twins[0]).status_code == 404
    assert not Review.objects.exists()


@pytest.mark.parametrize("persona", ["curator", "adjudicator", "outsider"])
def test_non_reviewers_are_forbidden_the_pair_pages(client, people, paired, persona):
    _benchmark, twins = paired
    client.force_login(people[persona])
    assert client.get(reverse("pair-review", args=[twins[0].pk])).status_code == 403
    assert submit(client, twins[0]).status_code == 403
    assert client.get(reverse("pair-next")).status_code == 403
    assert client.post(reverse("pairs-blind"), {"blinded": "1"}).status_code == 403
    assert not Review.objects.exists()


def test_anonymous_users_are_sent_to_login(client, paired):
    _benchmark, twins = paired
    for url in (
        reverse("pairs"),
        reverse("pair-next"),
        reverse("pair-review", args=[twins[0].pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response.url
    assert "/login/" in client.post(reverse("pairs-blind")).url


def test_wrong_methods_are_refused(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    assert client.delete(reverse("pair-review", args=[twins[0].pk])).status_code == 405
    assert client.post(reverse("pair-next")).status_code == 405
    assert client.get(reverse("pairs-blind")).status_code == 405
    assert client.post(reverse("pairs")).status_code == 405


def test_the_queue_ends_on_the_pairs_page(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    for twin in twins:
        submit(client, twin)
    response = client.get(reverse("pair-next"))
    assert response.url == reverse("pairs")
    page = client.get(response.url)
    assert "No pair is waiting" in page.content.decode()
    assert page.context["progress"].done == 4


def test_the_pairs_home_serves_each_role(client, people, paired):
    client.force_login(people["curator"])
    response = client.get(reverse("pairs"))
    assert response.status_code == 200 and "medq" in response.content.decode()
    client.force_login(people["outsider"])
    assert client.get(reverse("pairs")).status_code == 403


def test_a_curator_blinds_every_pair_review_of_a_benchmark(client, people, paired):
    benchmark, twins = paired
    client.force_login(people["curator"])
    home = client.get(reverse("pairs")).content.decode()
    assert "Blind every review" in home
    response = client.post(
        reverse("benchmark-pairs-blind", args=[benchmark.name]), {"blinded": "1"}, follow=True
    )
    assert f"Every pair review of {benchmark.name} is now blinded." in response.content.decode()
    benchmark.refresh_from_db()
    assert benchmark.pairs_blinded

    # A reviewer whose own mode is off still gets the blinded page, and is told why.
    client.force_login(people["reviewer"])
    client.post(reverse("pairs-blind"), {"blinded": "0"})
    assert benchmark.name in client.get(reverse("pairs")).content.decode()
    html = client.get(reverse("pair-review", args=[twins[0].pk])).content.decode()
    assert "Blinded by the curator" in html and "Which image is degraded?" in html
    assert "Degraded image" not in html and "Clean image" not in html
    assert submit(client, twins[0]).status_code == 400  # the side first, as in any blind review
    submit(client, twins[0], identified_side="right")
    assert Review.objects.get(item=twins[0]).identified_degraded_side == "right"

    # Back to each reviewer's choice: the same reviewer sees the roles again.
    client.force_login(people["curator"])
    client.post(reverse("benchmark-pairs-blind", args=[benchmark.name]), {"blinded": "0"})
    client.force_login(people["reviewer"])
    html = client.get(reverse("pair-review", args=[twins[1].pk])).content.decode()
    assert "Degraded image" in html and "Blinded" not in html


def test_the_service_refuses_an_unblinded_review_where_the_curator_blinded(people, paired):
    from annotations.services.errors import DomainError
    from annotations.services.pair_review import benchmark_pairs_blind, pair_review_submit

    benchmark, twins = paired
    benchmark_pairs_blind(benchmark=benchmark, blinded=True)
    twin = type(twins[0]).objects.select_related("benchmark").get(pk=twins[0].pk)
    with pytest.raises(DomainError, match="which side"):
        pair_review_submit(
            item=twin,
            reviewer=people["reviewer"],
            version=twin.version,
            answerable=True,
            realism=4,
            severity_judgement="right",
        )
    assert not Review.objects.filter(item=twin).exists()


def test_only_curators_blind_a_benchmark(client, people, paired):
    benchmark, _twins = paired
    url = reverse("benchmark-pairs-blind", args=[benchmark.name])
    for who in ("reviewer", "adjudicator"):
        client.force_login(people[who])
        assert client.post(url, {"blinded": "1"}).status_code == 403
    client.force_login(people["curator"])
    assert client.get(url).status_code == 405
    benchmark.refresh_from_db()
    assert not benchmark.pairs_blinded


def test_a_disputed_pair_is_adjudicated_beside_its_clean_image_with_both_judgements(
    client, people, paired
):
    _benchmark, twins = paired
    twin = twins[1]
    client.force_login(people["reviewer"])
    submit(client, twin, realism="5")
    client.force_login(people["reviewer2"])
    client.post(reverse("pairs-blind"), {"blinded": "1"})
    actual = degraded_side(item_id=twin.pk, reviewer_id=people["reviewer2"].pk)
    wrong = "left" if actual == "right" else "right"
    submit(client, twin, realism="2", severity_judgement="too_strong", identified_side=wrong)
    twin.refresh_from_db()
    assert twin.status == ItemStatus.DISPUTED

    client.force_login(people["adjudicator"])
    html = client.get(reverse("adjudicate", args=[twin.pk])).content.decode()
    clean_sha = twin.clean_twin.item_images.get().image.sha256
    degraded_sha = twin.item_images.get().image.sha256
    assert html.index(clean_sha) < html.index(degraded_sha)  # clean first, both shown
    assert "Clean image" in html and "Degraded image" in html
    assert html.count("data-pair-judgement") == 2
    assert "<b>5</b> / 5" in html and "<b>2</b> / 5" in html
    assert "Too strong" in html
    assert "took the clean image for the degraded one" in html  # reviewer2's blinded guess


def test_the_adjudication_page_of_a_pair_runs_a_constant_number_of_queries(
    client, people, paired, django_assert_num_queries
):
    _benchmark, twins = paired
    for person in ("reviewer", "reviewer2"):
        client.force_login(people[person])
        for twin in twins[:2]:
            submit(client, twin, realism="5" if person == "reviewer" else "1")
    client.force_login(people["adjudicator"])
    # session, user, roles, "did I review it?" (independence), item + benchmark + clean twin,
    # its images, the clean twin's images, review slots, reviews with their reviewers, my
    # disputes left
    for twin in twins[:2]:
        with django_assert_num_queries(10):
            assert client.get(reverse("adjudicate", args=[twin.pk])).status_code == 200
