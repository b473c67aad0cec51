"""Safe Markdown rendering for game rules and other trusted-but-escaped text."""

from __future__ import annotations

import functools

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}


@functools.lru_cache(maxsize=64)
def render_markdown(text: str) -> SafeString:
    """Markdown to HTML, then sanitized: raw HTML, scripts, event handlers and odd URL schemes are removed.

    Memoized: game rules change only when the games are synced.
    """
    html = markdown.markdown(text or "", extensions=["tables", "fenced_code", "sane_lists"])
    cleaned = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(cleaned)  # noqa: S308 - sanitized by nh3 just above
