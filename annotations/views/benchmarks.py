"""The benchmark hub: counts, progress, every action the user's roles allow, and the items."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from annotations import selectors
from annotations.access import ADJUDICATOR, CURATOR, REVIEWER, ROLES, has_role, role_required
from annotations.forms import DrawForm
from annotations.models import Benchmark, Item, ItemKind, ItemStatus
from annotations.selectors import draws as draw_selectors
from annotations.selectors import hub as hub_selectors
from annotations.selectors import visibility

PAGE_SIZE = 50


@dataclass(frozen=True)
class Action:
    label: str
    url: str
    note: str = ""
    primary: bool = False
    key: str = ""  # a stable name for tests and styling


@dataclass(frozen=True)
class ActionGroup:
    title: str
    actions: list[Action]


def hub_actions(user: Any, hub: hub_selectors.Hub, *, gold_visible: bool) -> list[ActionGroup]:
    """What `user` may do with the benchmark, grouped by area; only pages their roles open.
    Pages made of gold answers are left out while the user's human baseline runs (they 403)."""
    name = hub.benchmark.name
    curator, adjudicator = has_role(user, CURATOR), has_role(user, ADJUDICATOR)
    reviewer = has_role(user, REVIEWER)
    review: list[Action] = []
    if reviewer and hub.mine_open:
        # The benchmark's own queue: its items only, with its own progress.
        note = _("%(n)d open for you") % {"n": hub.mine_open}
        url = f"{reverse('review-queue')}?benchmark={name}"
        review.append(Action(_("Review my items"), url, note, True, "review"))
    if curator:
        note = _("%(n)d pending, not yet assigned") % {"n": hub.unassigned}
        url = reverse("review-assign", args=[name])
        review.append(
            Action(_("Assign for double review"), url, note, bool(hub.unassigned), "assign")
        )
        review.append(
            Action(_("Open a human-baseline session"), f"{url}#baseline", key="baseline-open")
        )
    if reviewer or adjudicator:
        note = _("%(n)d on this benchmark") % {"n": hub.baselines} if hub.baselines else ""
        review.append(Action(_("My human-baseline sessions"), reverse("baseline-list"), note))
    if adjudicator and hub.to_settle:
        note = _("%(n)d for you to settle") % {"n": hub.to_settle}
        url = f"{reverse('adjudication')}?benchmark={name}"
        review.append(Action(_("Adjudicate"), url, note, True, "adjudicate"))
    if hub.twins:
        note = _("%(n)d degraded twins") % {"n": hub.twins}
        review.append(Action(_("Pairs"), reverse("pairs"), note, key="pairs"))
    if hub.cases:
        note = _("%(n)d cases") % {"n": hub.cases}
        url = reverse("benchmark-cases", args=[name])
        review.append(Action(_("CT cases"), url, note, key="cases"))

    quality: list[Action] = []
    if (curator or adjudicator) and gold_visible:
        quality.append(Action(_("Agreement"), reverse("agreement", args=[name]), key="agreement"))
        quality.append(Action(_("Triage"), reverse("triage", args=[name]), key="triage"))
        if hub.twins:
            url = reverse("robustness", args=[name])
            quality.append(Action(_("Robustness"), url, key="robustness"))

    models: list[Action] = []
    curate: list[Action] = []
    if curator:
        if gold_visible:
            note = _("%(n)d model runs") % {"n": hub.runs}
            url = f"{reverse('runs')}?benchmark={name}"  # the form's benchmark, by name
            models.append(Action(_("Run a model"), url, note, key="runs"))
            url = reverse("leaderboard", args=[name])
            models.append(Action(_("Leaderboard"), url, key="leaderboard"))
        models.append(Action(_("Blinded grading"), reverse("grading"), key="grading"))
        url = reverse("benchmark-import")
        curate.append(Action(_("Import another benchmark"), url, key="import"))
        curate.append(
            Action(
                _("Make degraded twins"), reverse("benchmark-degrade", args=[name]), key="degrade"
            )
        )
        if gold_visible:
            note = _("%(n)d releases") % {"n": hub.releases}
            url = reverse("benchmark-releases", args=[name])
            curate.append(Action(_("Releases"), url, note, key="releases"))
            url = reverse("release-new", args=[name])
            curate.append(Action(_("New release"), url, key="release-new"))
        url = reverse("benchmark-settings", args=[name])
        curate.append(Action(_("Settings and their history"), url, key="settings"))
        curate.append(Action(_("Background jobs"), reverse("jobs"), key="jobs"))
    groups = [
        ActionGroup(_("Review"), review),
        ActionGroup(_("Quality"), quality),
        ActionGroup(_("Models"), models),
        ActionGroup(_("Curate"), curate),
    ]
    return [group for group in groups if group.actions]


def _item_list(request: HttpRequest, benchmark: Benchmark) -> dict[str, Any]:
    filters = {key: request.GET.get(key, "") for key in ("status", "kind", "category", "q")}
    items = selectors.benchmark_items(
        benchmark,
        status=filters["status"],
        kind=filters["kind"],
        category=filters["category"],
        query=filters["q"],
    )
    if benchmark.is_pool:
        # A pool's list is paged by key and counted once (at import): never read whole.
        categories = list(benchmark.taxonomy.get("category", []))
        page = selectors.keyset_page(items, request.GET.get("after"), PAGE_SIZE)
    else:
        categories = list(
            Item.objects.filter(benchmark=benchmark)
            .order_by("category")
            .values_list("category", flat=True)
            .distinct()
        )
        page = Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    return {
        "page": page,
        "statuses": ItemStatus.choices,
        "kinds": ItemKind.choices,
        "categories": [c for c in categories if c],
        "filters": filters,
    }


@require_GET
@role_required(*ROLES)
def benchmark_hub(request: HttpRequest, name: str) -> HttpResponse:
    benchmark = visibility.get_benchmark_for_user_or_404(request.user, name)
    return hub_page(request, benchmark)


def hub_page(
    request: HttpRequest, benchmark: Benchmark, *, draw_form: Any = None, status: int = 200
) -> HttpResponse:
    """The hub; `draw_form` is a refused draw, shown with what was typed and why."""
    gold_visible = not visibility.gold_hidden(request.user, benchmark.pk)
    hub = hub_selectors.benchmark_hub(request.user, benchmark)
    curator = has_role(request.user, CURATOR)
    pool = draw_selectors.pool_summary(benchmark, visibility.benchmarks_visible_to(request.user))
    if pool is not None and curator and draw_form is None:
        draw_form = DrawForm.for_pool(pool)
    context = {
        "benchmark": benchmark,
        "hub": hub,
        "groups": hub_actions(request.user, hub, gold_visible=gold_visible),
        "gold_visible": gold_visible,
        "pool": pool,
        "draw_form": draw_form,
        "drawn": draw_selectors.draw_summary(benchmark) if curator or gold_visible else None,
        "may_curate": curator,
        **_item_list(request, benchmark),
    }
    return render(request, "annotations/benchmark.html", context, status=status)
