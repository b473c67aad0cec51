"""The notifications page: newest first, with mark-as-read."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.actions import mark_notifications_read
from web.signed_in import signed_in

PAGE_SIZE = 30


@login_required
def notifications(request: HttpRequest) -> HttpResponse:
    """The user's notifications, 30 a page, unread ones highlighted."""
    page = Paginator(signed_in(request).notifications.order_by("-created_at", "-pk"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(request, "web/notifications.html", {"page": page})


@login_required
@require_POST
def notifications_read(request: HttpRequest) -> HttpResponse:
    """Mark one notification (``id``) or all of them read, then go back to the list."""
    raw = request.POST.get("id", "")
    ids = [int(raw)] if raw.isdigit() else None
    mark_notifications_read(signed_in(request), ids)
    return HttpResponseRedirect(reverse("web:notifications"))
