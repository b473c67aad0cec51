"""axe-core in the browser tests: inject the locked axe-core (``tests/web/a11y/``, installed by
``run_tests.sh`` with ``npm ci``) into a Playwright page and return its critical and serious violations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE_JS = Path(__file__).resolve().parent / "a11y" / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.0/2.1 A and AA plus axe's best practices (the checks that found "links told apart only by colour").
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
# Also axe's experimental "label-content-name-mismatch": a control's accessible name must contain its
# visible text (WCAG 2.5.3; buttons named "First move (Home)" showing "« First" failed it).
BLOCKING = ("critical", "serious")


def axe_source() -> str:
    if not AXE_JS.is_file():
        raise RuntimeError(
            f"{AXE_JS} is missing: run `npm ci --prefix tests/web/a11y` (run_tests.sh does it)"
        )
    return AXE_JS.read_text()


def violations(page: Any, impacts: tuple[str, ...] = BLOCKING) -> list[dict[str, Any]]:
    """axe's violations on the page as it is now, of the given impacts (critical and serious)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=axe_source())
    result = page.evaluate(
        """tags => axe.run(document, {
            runOnly: {type: 'tag', values: tags},
            rules: {'label-content-name-mismatch': {enabled: true}},
            resultTypes: ['violations'],
        })""",
        TAGS,
    )
    return [v for v in result["violations"] if v.get("impact") in impacts]


def describe(found: list[dict[str, Any]]) -> str:
    """One line per violation and node: rule, impact, selector and axe's summary of what fails."""
    lines = []
    for v in found:
        for node in v["nodes"][:6]:
            summary = (node.get("failureSummary") or "").replace("\n", " ")[:220]
            lines.append(f"{v['impact']} {v['id']}: {node['target']} {summary}")
        if len(v["nodes"]) > 6:
            lines.append(f"  ... and {len(v['nodes']) - 6} more {v['id']}")
    return "\n".join(lines)
