"""The platform's data model, one module per aggregate. Only ``core.actions`` changes states."""

from core.models.agent_data import StoredAgentData
from core.models.api_token import ApiToken
from core.models.blob import Blob, BlobChunk
from core.models.competitor import Competitor, Revision
from core.models.duel import Duel, Match
from core.models.environment import Environment
from core.models.jobs import FencedWork, JobState, LeasedJob
from core.models.notification import Notification
from core.models.pairs import PairRecord
from core.models.pipeline import Build, SmokeTest
from core.models.play import PlaySession
from core.models.rating import Rating, RatingHistory
from core.models.season import Season, SeasonFinalist, SeasonFinalsDuel
from core.models.tournament import Tournament, TournamentParticipant
from core.models.user import User
from core.models.worker import ReaperState, WorkerStatus

__all__ = [
    "ApiToken",
    "Blob",
    "BlobChunk",
    "Build",
    "Competitor",
    "Duel",
    "Environment",
    "FencedWork",
    "JobState",
    "LeasedJob",
    "Match",
    "Notification",
    "PairRecord",
    "PlaySession",
    "Rating",
    "RatingHistory",
    "ReaperState",
    "Revision",
    "Season",
    "SeasonFinalist",
    "SeasonFinalsDuel",
    "SmokeTest",
    "StoredAgentData",
    "Tournament",
    "TournamentParticipant",
    "User",
    "WorkerStatus",
]
