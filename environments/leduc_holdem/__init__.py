"""Leduc Hold'em: a match of ten hands of the small two-round poker game of the research literature."""
