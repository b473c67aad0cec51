"""Goofspiel with 13 cards: simultaneous bids for a shuffled deck of prizes."""
