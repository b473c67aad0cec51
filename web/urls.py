"""URLs of the web app: pages under ``/``, accounts under ``/accounts/``, the JSON API under ``/api/``."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy
from django.views.generic import TemplateView

from web.page_cache import cached_page, competitor_version, game_version
from web.views import (
    accounts,
    agent_data,
    health,
    kits,
    notifications,
    ops,
    pages,
    play,
    records,
    seasons,
    upload,
)

# Public pages served from the cache to anonymous visitors, keyed by the ratings they show (page_cache.py).
game_page = cached_page("game", game_version)(pages.game)
leaderboard_partial = cached_page("leaderboard", game_version)(pages.leaderboard_partial)
competitor_page = cached_page("competitor", competitor_version)(pages.competitor)

app_name = "web"

account_patterns = [
    path("signup/", accounts.signup, name="signup"),
    path("login/", accounts.RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("profile/", accounts.profile, name="profile"),
    path("profile/token/", accounts.rotate_token, name="token-rotate"),
    path("profile/token/<int:pk>/revoke/", accounts.revoke_token, name="token-revoke"),
    path(
        "password/change/",
        auth_views.PasswordChangeView.as_view(
            template_name="web/accounts/password_change.html",
            success_url=reverse_lazy("web:password_change_done"),
        ),
        name="password_change",
    ),
    path(
        "password/change/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="web/accounts/password_change_done.html"),
        name="password_change_done",
    ),
    path("password/reset/", accounts.RateLimitedPasswordResetView.as_view(), name="password_reset"),
    path(
        "password/reset/sent/",
        auth_views.PasswordResetDoneView.as_view(template_name="web/accounts/password_reset_done.html"),
        name="password_reset_done",
    ),
    path(
        "password/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="web/accounts/password_reset_confirm.html",
            success_url=reverse_lazy("web:password_reset_complete"),
        ),
        name="password_reset_confirm",
    ),
    path(
        "password/reset/complete/",
        auth_views.PasswordResetCompleteView.as_view(
            template_name="web/accounts/password_reset_complete.html"
        ),
        name="password_reset_complete",
    ),
]

urlpatterns = [
    path("", pages.home, name="home"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
    path("accounts/", include(account_patterns)),
    path("games/<slug:slug>/", game_page, name="game"),
    path("games/<slug:slug>/leaderboard/", leaderboard_partial, name="leaderboard"),
    path("games/<slug:slug>/records.jsonl", records.records_download, name="records"),
    path("games/<slug:slug>/starter.zip", kits.starter_kit, name="starter-kit"),
    path("games/<slug:slug>/seasons/", seasons.season_list, name="seasons"),
    path("games/<slug:slug>/seasons/<int:pk>/", seasons.season_detail, name="season"),
    path("guide/", kits.guide, name="guide"),
    path("downloads/rl-arena-client.zip", kits.client_download, name="client-download"),
    path("notifications/", notifications.notifications, name="notifications"),
    path("notifications/read/", notifications.notifications_read, name="notifications-read"),
    path("competitors/<int:pk>/", competitor_page, name="competitor"),
    path("competitors/<int:pk>/data.tar", agent_data.download, name="agent-data-download"),
    path("competitors/<int:pk>/data/reset/", agent_data.reset, name="agent-data-reset"),
    path("revisions/<int:pk>/", pages.revision, name="revision"),
    path("revisions/<int:pk>/status/", pages.revision_status, name="revision-status"),
    path("revisions/<int:pk>/source.zip", pages.revision_download, name="revision-download"),
    path("duels/<int:pk>/", pages.duel, name="duel"),
    path("duels/<int:pk>/matches/", pages.duel_matches, name="duel-matches"),
    path("matches/<int:pk>/", pages.match, name="match"),
    path("competitors/<int:pk>/play/", play.play_start, name="play-start"),
    path("competitors/<int:pk>/challenge/", play.challenge, name="challenge"),
    path("play/", play.my_live_games, name="live-games"),
    path("play/<int:pk>/", play.play, name="play"),
    path("play/<int:pk>/end/", play.play_end, name="play-end"),
    path("play/<int:pk>/state/", play.play_state, name="play-state"),
    path("play/<int:pk>/move/", play.play_move, name="play-move"),
    path("upload/", upload.upload, name="upload"),
    path("api-docs/", TemplateView.as_view(template_name="web/api_docs.html"), name="api-docs"),
    path("api/", include("web.api.urls")),
]
