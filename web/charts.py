"""Server-side SVG charts (no JavaScript, no CDN): the rating-over-time plot."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe


@dataclass(frozen=True)
class RatingPoint:
    """One point of a competitor's rating history."""

    when: datetime
    mu: float
    sigma: float


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / (count - 1)
    return [lo + i * step for i in range(count)]


def rating_chart(points: Sequence[RatingPoint], width: int = 640, height: int = 240) -> SafeString:
    """An inline SVG of mu with a +-3 sigma band and the conservative skill mu - 3 sigma, by update order.

    Returns an empty string when there are fewer than two points.
    """
    if len(points) < 2:
        return mark_safe("")
    left, right, top, bottom = 44, 10, 10, 26
    plot_w, plot_h = width - left - right, height - top - bottom
    lows = [p.mu - 3 * p.sigma for p in points]
    highs = [p.mu + 3 * p.sigma for p in points]
    y_lo, y_hi = min(lows), max(highs)
    if y_hi - y_lo < 1e-9:
        y_lo, y_hi = y_lo - 1, y_hi + 1
    n = len(points)

    def x(i: int) -> float:
        return left + plot_w * i / (n - 1)

    def y(v: float) -> float:
        return top + plot_h * (1 - (v - y_lo) / (y_hi - y_lo))

    band = " ".join(f"{x(i):.1f},{y(h):.1f}" for i, h in enumerate(highs))
    band += " " + " ".join(f"{x(i):.1f},{y(lo):.1f}" for i, lo in reversed(list(enumerate(lows))))
    mu_line = " ".join(f"{x(i):.1f},{y(p.mu):.1f}" for i, p in enumerate(points))
    cons_line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(lows))
    grid = format_html_join(
        "",
        '<line class="grid-line" x1="{}" x2="{}" y1="{}" y2="{}"/>'
        '<text x="{}" y="{}" text-anchor="end">{}</text>',
        (
            (left, width - right, f"{y(t):.1f}", f"{y(t):.1f}", left - 6, f"{y(t) + 4:.1f}", f"{t:.1f}")
            for t in _ticks(y_lo, y_hi)
        ),
    )
    first, last = points[0].when, points[-1].when
    return format_html(
        '<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-labelledby="chart-title chart-desc">'
        '<title id="chart-title">Rating over time</title>'
        '<desc id="chart-desc">Mean skill μ from {mu0} to {mu1} over {n} updates; '
        "conservative skill (mu - 3 sigma) from {c0} to {c1}.</desc>"
        "{grid}"
        '<line class="axis" x1="{l}" x2="{l}" y1="{t}" y2="{b}"/>'
        '<line class="axis" x1="{l}" x2="{r}" y1="{b}" y2="{b}"/>'
        '<polygon class="band" points="{band}"/>'
        '<polyline class="line-mu" points="{mu}"/>'
        '<polyline class="line-cons" points="{cons}"/>'
        '<text x="{l}" y="{ty}" text-anchor="start">{d0}</text>'
        '<text x="{r}" y="{ty}" text-anchor="end">{d1}</text>'
        "</svg>",
        w=width,
        h=height,
        mu0=f"{points[0].mu:.2f}",
        mu1=f"{points[-1].mu:.2f}",
        n=n,
        c0=f"{lows[0]:.2f}",
        c1=f"{lows[-1]:.2f}",
        grid=grid,
        l=left,
        r=width - right,
        t=top,
        b=top + plot_h,
        band=band,
        mu=mu_line,
        cons=cons_line,
        ty=height - 6,
        d0=first.strftime("%Y-%m-%d %H:%M"),
        d1=last.strftime("%Y-%m-%d %H:%M"),
    )
