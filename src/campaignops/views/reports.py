"""The reports view: STATUS.md's links to the summaries `campaign report --write` wrote.

A report is ``reports/<manifest>-<stage>.md`` (docs/formats.md, "Reports"), with its picture
beside it; the block lists the reports the checkout holds, so it changes when one is written.
"""

from __future__ import annotations

from pathlib import Path

REPORTS_DIR = "reports"
NONE_YET = "_No report yet: `campaign report --write` writes one per manifest and stage._"


def listed(root: Path) -> list[str]:
    """The report files under ``root`` (campaign-relative, sorted); a link is not followed."""
    folder = root / REPORTS_DIR
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(
        f"{REPORTS_DIR}/{p.name}"
        for p in folder.iterdir()
        if p.suffix == ".md" and p.is_file() and not p.is_symlink()
    )


def render(root: Path) -> str:
    """One line per report: a Markdown link GitHub and GitLab follow from STATUS.md."""
    found = listed(root)
    if not found:
        return NONE_YET
    return "\n".join(f"- [{Path(rel).stem}]({rel})" for rel in found)
