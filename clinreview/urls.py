from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog

from annotations.views.accounts import LogoutView
from annotations.views.language import LanguageLoginView, language_switch

urlpatterns = [
    path("login/", LanguageLoginView.as_view(), name="login"),
    path("logout/", LogoutView.as_view(), name="logout"),
    path("i18n/setlang/", language_switch, name="set_language"),
    path("jsi18n/", login_not_required(JavaScriptCatalog.as_view()), name="javascript-catalog"),
    path("admin/", admin.site.urls),
    path("api/", include("annotations.api.urls")),
    path("", include("annotations.urls")),
]
