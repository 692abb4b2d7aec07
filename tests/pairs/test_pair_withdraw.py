"""Pair reviews share the review service: an unblinded judgement can be withdrawn until the other
review is in; a blinded one never (its degraded side was revealed); refusals keep the comment."""

from __future__ import annotations

from django.urls import reverse

from annotations.models import Review, ReviewChange
from tests.pairs.test_pair_review_views import submit


def test_an_unblinded_judgement_is_withdrawn_and_judged_again(client, people, paired):
    _benchmark, twins = paired
    twin = twins[0]
    client.force_login(people["reviewer"])
    submit(client, twin, realism="1")
    page = client.get(reverse("pair-review", args=[twin.pk]))
    assert "data-pair-withdraw" in page.content.decode()
    assert client.get(reverse("pair-withdraw", args=[twin.pk])).status_code == 405
    response = client.post(reverse("pair-withdraw", args=[twin.pk]), follow=True)
    assert "Judge the pair again" in response.content.decode()
    assert "data-pair-form" in response.content.decode()
    assert not Review.objects.filter(item=twin).exists()
    assert ReviewChange.objects.get().previous["realism"] == 1
    submit(client, twin, realism="4")
    assert Review.objects.get(item=twin).realism == 4


def test_no_withdrawal_once_the_other_review_is_in_or_after_a_blinded_guess(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer2"])
    submit(client, twins[0])
    client.force_login(people["reviewer"])
    submit(client, twins[0])
    assert (
        "data-pair-withdraw"
        not in client.get(reverse("pair-review", args=[twins[0].pk])).content.decode()
    )
    refused = client.post(reverse("pair-withdraw", args=[twins[0].pk]), follow=True)
    assert "can no longer be withdrawn" in refused.content.decode()
    assert Review.objects.filter(item=twins[0]).count() == 2

    session = client.session
    session["pairs_blinded"] = True
    session.save()
    submit(client, twins[1], identified_side="left")
    assert (
        "data-pair-withdraw"
        not in client.get(reverse("pair-review", args=[twins[1].pk])).content.decode()
    )
    client.post(reverse("pair-withdraw", args=[twins[1].pk]))
    assert Review.objects.filter(item=twins[1], reviewer=people["reviewer"]).exists()
    assert not ReviewChange.objects.exists()


def test_a_refused_judgement_of_a_reviewed_pair_keeps_its_comment(client, people, paired):
    _benchmark, twins = paired
    client.force_login(people["reviewer"])
    submit(client, twins[0])
    response = submit(client, twins[0], comment="noise hides the lesion edge")
    assert response.status_code == 400
    html = response.content.decode()
    assert "already reviewed" in html and "data-draft-kept" in html
    assert "noise hides the lesion edge" in html
