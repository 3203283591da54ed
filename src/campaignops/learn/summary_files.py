"""campaign report --write: ``reports/<manifest>-<stage>.md`` and its picture beside it, and
STATUS.md's ``reports`` block listing them (docs/formats.md, "Reports").

A campaign made before the block existed gets the section appended to its STATUS.md once; then
every view is re-rendered as campaign render does, so the link appears at once.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from campaignops.core.atomic import write_atomic
from campaignops.core.errors import InputError
from campaignops.learn import summary_render, summary_svg
from campaignops.learn.summary import Summary
from campaignops.views import render as views
from campaignops.views.render import cell
from campaignops.views.reports import REPORTS_DIR

STATUS = "STATUS.md"
SECTION = (
    "\n## Reports\n\nSummaries written by `campaign report --write`, one per manifest and "
    "stage.\n\n<!-- campaign:begin reports -->\n<!-- campaign:end reports -->\n"
)


def stem(manifest: str, stage: str) -> str:
    """``manifests/train.yaml`` at smoke → ``train-smoke`` (a manifest in a subfolder keeps
    the folder, joined by ``-``: ``manifests/a/b.yaml`` → ``a-b-smoke``)."""
    path = PurePosixPath(manifest)
    parts = path.with_suffix("").parts
    if len(parts) > 1 and parts[0] == "manifests":
        parts = parts[1:]
    return "-".join((*parts, stage))


def _ensure_block(root: Path) -> None:
    status = root / STATUS
    if not status.is_file():
        return  # nothing to link from: the reports are still written
    text = status.read_text(encoding="utf-8")
    if "<!-- campaign:begin reports -->" in text:
        return
    write_atomic(status, (text.rstrip("\n") + "\n" + SECTION).encode("utf-8"), root=root)


def write(*, root: Path, summary: Summary) -> list[str]:
    """Write one report (and its SVG) per manifest and stage of ``summary``; return the
    campaign-relative paths written. STATUS.md's reports block is re-rendered."""
    folder = root / REPORTS_DIR
    if folder.is_symlink():
        raise InputError(
            path=REPORTS_DIR,
            message="is a symbolic link: campaign report writes only inside the campaign",
            hint=f"remove the link and make {REPORTS_DIR}/ a folder",
        )
    folder.mkdir(exist_ok=True)
    keys = dict.fromkeys((g.manifest, g.stage) for g in summary.groups)
    written: list[str] = []
    for manifest, stage in keys:
        name = stem(manifest, stage)
        part = Summary(
            groups=tuple(g for g in summary.groups if (g.manifest, g.stage) == (manifest, stage))
        )
        # A manifest's path is the user's: one line, no pipe or markup of its own.
        title = f"Campaign report: {cell(manifest)}, {stage}"
        md = summary_render.markdown(part, title=title, picture=f"{name}.svg")
        picture = summary_svg.svg(part.groups, title=title)
        for rel, text in ((f"{name}.md", md + "\n"), (f"{name}.svg", picture)):
            write_atomic(folder / rel, text.encode("utf-8"), root=root)
            written.append(f"{REPORTS_DIR}/{rel}")
    _ensure_block(root)
    views.render_all(root=root, write=True)
    return written
