"""``/admin/login/`` with the same login throttling as the site (``core.actions.login_throttle``).

Django's admin login has no limit of its own; this view asks the throttle first, answers 429 with
``Retry-After`` when the attempt must wait, and otherwise lets ``admin.site.login`` check the password,
reporting the outcome back (a redirect with a signed-in user is a success).
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect

from core.actions.login_throttle import check_login, login_failed, login_succeeded
from core.client_address import client_address


@never_cache
@csrf_protect
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login page; POSTs are throttled per address and per (account, address)."""
    if request.method != "POST":
        return admin.site.login(request)
    account = (request.POST.get("username") or "").strip().lower()
    address = client_address(request)
    verdict = check_login(account, address)
    if not verdict.allowed:
        response = HttpResponse(
            f"Too many attempts ({verdict.reason}). Try again in {verdict.retry_after} s.\n",
            status=429,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = str(verdict.retry_after)
        return response
    response = admin.site.login(request)
    if response.status_code in (301, 302) and request.user.is_authenticated:
        login_succeeded(account, address)
    else:
        login_failed(account, address)
    return response
