"""The admin shows reviewed and curated content and writes none of it (issue 22): changes go
through the app's pages and services, which keep revisions and history."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from django.urls import reverse

from annotations import models
from tests.factories import make_benchmark, make_item

READ_ONLY = [
    models.Item,
    models.ItemRevision,
    models.Review,
    models.Adjudication,
    models.Release,
    models.Box,
    models.BoxRevision,
    models.Case,
    models.Image,
    models.Volume,
    models.Assignment,
    models.Run,
    models.Prediction,
    models.GradingSession,
    models.Grade,
    models.BenchmarkRevision,
]

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser():
    return get_user_model().objects.create_superuser("root", "root@example.org", "pw-root-1234")


@pytest.fixture
def admin_client(client, superuser):
    client.force_login(superuser)
    return client


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_a_superuser_may_view_but_not_add_change_or_delete(model, superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    model_admin = admin.site._registry[model]

    assert model_admin.has_view_permission(request)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert "delete_selected" not in model_admin.get_actions(request)


@pytest.mark.parametrize("model", [models.Item, models.Case], ids=lambda m: m.__name__)
def test_the_inlines_write_nothing(model, superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    for inline in admin.site._registry[model].get_inline_instances(request):
        assert not inline.has_add_permission(request, None)
        assert not inline.has_change_permission(request)
        assert not inline.has_delete_permission(request)


def test_the_item_list_and_page_are_shown(admin_client):
    item = make_item(make_benchmark())

    listing = admin_client.get(reverse("admin:annotations_item_changelist"))
    page = admin_client.get(reverse("admin:annotations_item_change", args=[item.pk]))

    assert listing.status_code == 200
    assert page.status_code == 200
    assert item.question in page.content.decode()
    assert 'name="_save"' not in page.content.decode()


def test_posting_a_change_to_an_item_is_refused_and_stores_nothing(admin_client):
    item = make_item(make_benchmark())

    response = admin_client.post(
        reverse("admin:annotations_item_change", args=[item.pk]),
        {"question": "Rewritten behind the services' back", "answer": "B"},
    )

    assert response.status_code == 403
    item.refresh_from_db()
    assert item.question.startswith("Which finding")
    assert item.version == 1
    assert models.ItemRevision.objects.filter(item=item).count() == 1


def test_deleting_an_item_is_refused(admin_client):
    item = make_item(make_benchmark())

    response = admin_client.post(
        reverse("admin:annotations_item_delete", args=[item.pk]), {"post": "yes"}
    )

    assert response.status_code == 403
    assert models.Item.objects.filter(pk=item.pk).exists()


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_the_add_page_is_refused(admin_client, model):
    response = admin_client.get(reverse(f"admin:annotations_{model._meta.model_name}_add"))

    assert response.status_code == 403


def test_anonymous_visitors_are_sent_to_the_admin_login(client):
    response = client.get(reverse("admin:annotations_item_changelist"))

    assert response.status_code == 302
    assert "/login/" in response["Location"]
