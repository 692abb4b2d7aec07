"""How django-axes counts failed logins (the form and POST /api/token/), and under which address.

Lockouts must not be a weapon against the people they protect:

- failures are counted per user name *and* address: someone guessing alice's password from
  their own address locks only that pair, never alice at her desk;
- an address is locked as a whole only at a higher bound (LOGIN_ADDRESS_FAILURE_LIMIT), and only
  failures for user names that exist count towards it: unknown names lock nobody out;
- the address is the client's own: REMOTE_ADDR, unless the deployment names its reverse proxies
  (TRUSTED_PROXY_COUNT, and the header they set, TRUSTED_PROXY_HEADER). A forwarded-for header is
  never trusted by default, so a client cannot pick the address it is counted under.
"""

from __future__ import annotations

import ipaddress

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Sum


def client_address(request) -> str | None:
    """The client's address (AXES_CLIENT_IP_CALLABLE). Behind TRUSTED_PROXY_COUNT proxies that
    each append the address they received from to TRUSTED_PROXY_HEADER (X-Forwarded-For), the
    client is the entry that many places from the end; what the client itself wrote before it
    is ignored. Without configured proxies, or with a header shorter than that, REMOTE_ADDR."""
    remote = request.META.get("REMOTE_ADDR")
    count = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0))
    if count <= 0:
        return remote
    header = request.META.get(getattr(settings, "TRUSTED_PROXY_HEADER", "HTTP_X_FORWARDED_FOR"))
    hops = [hop.strip() for hop in (header or "").split(",") if hop.strip()]
    if len(hops) < count:
        return remote
    try:
        return str(ipaddress.ip_address(hops[-count]))
    except ValueError:
        return remote


def _failures(attempts) -> int:
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class LoginThrottleHandler(AxesDatabaseHandler):
    """Axes' database handler, counting as the module says: a (user name, address) pair locks
    at LOGIN_FAILURE_LIMIT failures, an address at LOGIN_ADDRESS_FAILURE_LIMIT failures for
    existing user names."""

    def get_failures(self, request, credentials: dict | None = None) -> int:
        recent = AccessAttempt.objects.all()
        if settings.AXES_COOLOFF_TIME is not None:
            recent = recent.filter(attempt_time__gte=get_cool_off_threshold(request))
        address = request.axes_ip_address
        username = get_client_username(request, credentials)
        pair = _failures(recent.filter(username=username, ip_address=address))
        known = get_user_model().objects.values(get_user_model().USERNAME_FIELD)
        from_address = _failures(recent.filter(ip_address=address, username__in=known))
        if from_address >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            return max(pair, get_failure_limit(request, credentials))
        return pair
