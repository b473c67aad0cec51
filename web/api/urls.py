"""API routes (namespace ``web:api``) and the OpenAPI schema."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from web.api import agent_data, challenges, leaderboard, records, views

app_name = "api"

urlpatterns = [
    path("", views.ApiRoot.as_view(), name="root"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("auth/token/", views.ObtainToken.as_view(), name="token"),
    path("auth/token/rotate/", views.RotateToken.as_view(), name="token-rotate"),
    path("environments/", views.EnvironmentList.as_view(), name="environment-list"),
    path("environments/<slug:slug>/", views.EnvironmentDetail.as_view(), name="environment-detail"),
    path("environments/<slug:slug>/leaderboard/", leaderboard.Leaderboard.as_view(), name="leaderboard"),
    path("environments/<slug:slug>/records/", records.Records.as_view(), name="records"),
    path("competitors/", views.CompetitorList.as_view(), name="competitor-list"),
    path("competitors/<int:pk>/", views.CompetitorDetail.as_view(), name="competitor-detail"),
    path("competitors/<int:pk>/data/", agent_data.StoredData.as_view(), name="competitor-data"),
    path(
        "competitors/<int:pk>/data/archive/",
        agent_data.StoredDataArchive.as_view(),
        name="competitor-data-archive",
    ),
    path("revisions/", views.RevisionListCreate.as_view(), name="revision-list"),
    path("revisions/<int:pk>/", views.RevisionDetail.as_view(), name="revision-detail"),
    path("revisions/<int:pk>/logs/", views.RevisionLogs.as_view(), name="revision-logs"),
    path("duels/", views.DuelList.as_view(), name="duel-list"),
    path("challenges/", challenges.Challenges.as_view(), name="challenge-list"),
    path("duels/<int:pk>/", views.DuelDetail.as_view(), name="duel-detail"),
    path("duels/<int:pk>/replays/", views.DuelReplays.as_view(), name="duel-replays"),
    path("matches/<int:pk>/replay/", views.MatchReplay.as_view(), name="match-replay"),
]
