"""Accounts: sign up, log in with e-mail (rate-limited), log out, profile, password change and reset."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_http_methods, require_POST

from core.actions import accounts as actions
from core.actions.api_tokens import revoke_api_token, rotate_api_token
from core.actions.login_throttle import check_login, login_failed, login_succeeded
from core.models import ApiToken
from web import ratelimit
from web.forms import LoginForm, ProfileForm, SignupForm
from web.signed_in import signed_in

TOO_MANY = "Too many attempts. Please wait a few minutes and try again."
TOO_MANY_LOGINS = "Too many attempts: wait a little and try again"


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """Create an account and log in."""
    if request.user.is_authenticated:
        return redirect("web:home")
    form = SignupForm(request.POST or None)
    if request.method == "POST":
        if not ratelimit.allow("signup", ratelimit.client_ip(request)):
            form.add_error(None, TOO_MANY)
        elif form.is_valid():
            data = form.cleaned_data
            user = actions.register_user(
                email=data["email"],
                password=data["password1"],
                display_name=data["display_name"],
                team=data["team"],
                github=data["github"],
            )
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, "Welcome to RL Arena! Upload your first agent below.")
            return redirect("web:upload")
    return render(request, "web/accounts/signup.html", {"form": form}, status=400 if form.errors else 200)


class RateLimitedLoginView(auth_views.LoginView):
    """Django's login view, throttled by ``core.actions.login_throttle``: backoff per (account, address)
    and limits per address, so wrong passwords from elsewhere never lock the account's owner out."""

    template_name = "web/accounts/login.html"
    authentication_form = LoginForm
    redirect_authenticated_user = True

    def _attempt(self) -> tuple[str, str]:
        email = (self.request.POST.get("username") or "").strip().lower()
        return email, ratelimit.client_ip(self.request)

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        """Ask the throttle, then log in as usual (the outcome is reported back)."""
        verdict = check_login(*self._attempt())
        if not verdict.allowed:
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, f"{TOO_MANY_LOGINS} ({verdict.reason}; about {verdict.retry_after} s)")
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(verdict.retry_after)
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        """The right password: forget this address's failures for this account."""
        login_succeeded(*self._attempt())
        return super().form_valid(form)

    def form_invalid(self, form: Any) -> HttpResponse:
        """A wrong password (or an inactive account) counts for this account and address only."""
        login_failed(*self._attempt())
        return super().form_invalid(form)


class RateLimitedPasswordResetView(auth_views.PasswordResetView):
    """Send a reset link (to the console in development), a few times an hour per address at most."""

    template_name = "web/accounts/password_reset.html"
    email_template_name = "web/accounts/password_reset_email.txt"
    subject_template_name = "web/accounts/password_reset_subject.txt"
    success_url = reverse_lazy("web:password_reset_done")

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        """Count the attempt, then send as usual."""
        if not ratelimit.allow("password_reset", ratelimit.client_ip(request)):
            form = self.get_form()
            form.add_error(None, TOO_MANY)
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    """Edit display name, team and GitHub handle; list my competitors."""
    user = signed_in(request)
    form = ProfileForm(request.POST or None, initial=_profile_initial(user))
    if request.method == "POST" and form.is_valid():
        actions.update_profile(user, **form.cleaned_data)
        messages.success(request, "Profile saved.")
        return HttpResponseRedirect(request.path)
    return _profile_page(request, form, status=400 if form.errors else 200)


def _profile_initial(user: Any) -> dict[str, Any]:
    return {
        "display_name": user.display_name,
        "team": user.team,
        "github": user.github,
        "email_notifications": user.email_notifications,
    }


def _profile_page(
    request: HttpRequest, form: ProfileForm, *, new_token: str = "", status: int = 200
) -> HttpResponse:
    """The profile: the form, the user's competitors, their API tokens (and a new key, shown this once)."""
    competitors = (
        signed_in(request)
        .competitors.select_related("environment", "current_revision")
        .order_by("environment__name", "name")
    )
    tokens = ApiToken.objects.filter(user=signed_in(request)).order_by("-created_at", "-pk")
    context = {"form": form, "competitors": competitors, "api_tokens": list(tokens), "new_token": new_token}
    response = render(request, "web/accounts/profile.html", context, status=status)
    if new_token:  # shown once: nothing may keep a copy
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def rotate_token(request: HttpRequest) -> HttpResponse:
    """Replace the user's API tokens by a new one and show its key, this once (the server keeps a hash)."""
    key, _ = rotate_api_token(request.user, label="profile")
    return _profile_page(request, ProfileForm(initial=_profile_initial(request.user)), new_token=key)


@login_required
@require_POST
def revoke_token(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete one of the user's API tokens."""
    if revoke_api_token(request.user, pk):
        messages.success(request, "The token was revoked: it no longer works.")
    return redirect(reverse("web:profile") + "#token")
