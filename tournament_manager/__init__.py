"""Ladder matchmaking, ratings, tournament editions and leaderboards (see README.md)."""
