"""Deep nesting in every YAML file kind: exit 2 at path:line:col with the limit, never SIGSEGV.

libyaml's composer recurses in C once per level: ``'[' * 30000`` overflowed the C stack and
killed the process (exit 139, no output). Each case runs the real CLI in a subprocess, so such
a crash shows as its exit status instead of taking pytest down with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaignops.core import yamldoc
from tests.conftest import TODAY

LEVELS = 30_000
DEEP = "[" * LEVELS + "]" * LEVELS


def campaign(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if args[0] == "check":
        args = (*args, "--today", TODAY.isoformat())
    proc = subprocess.run(
        [sys.executable, "-m", "campaignops", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        env=os.environ,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def deepen(root: Path, rel: str) -> tuple[int, int]:
    """Add a key holding DEEP to the YAML of ``rel`` (a front matter's, for a page); returns the
    file's line:col of the first collection past the limit (the key's mapping is one level)."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    if rel.endswith(".md"):
        end = text.index("\n---", 3) + 1  # the front matter's closing line
    else:
        end = len(text) if text.endswith("\n") else len(text) + 1
        text += "\n" if not text.endswith("\n") else ""
    line = text[:end].count("\n") + 1
    path.write_text(text[:end] + f"x-deep: {DEEP}\n" + text[end:], encoding="utf-8")
    # "x-deep: " is 8 columns; the mapping is level 1, so bracket MAX_DEPTH is level MAX_DEPTH+1.
    return line, len("x-deep: ") + yamldoc.MAX_DEPTH


KINDS = ["manifests/example.yaml", "campaign.yaml", "backends/local.md", "failures.yaml"]


@pytest.mark.parametrize("rel", KINDS)
def test_check_refuses_deep_nesting_at_its_place(demo: Path, rel: str) -> None:
    line, col = deepen(demo, rel)
    proc = campaign(demo, "check")
    assert proc.returncode == 2, proc.stderr
    assert (
        f"campaign: error: {rel}:{line}:{col}: YAML nests deeper than "
        f"{yamldoc.MAX_DEPTH} levels, the limit of this tool\n"
        "  hint: flatten the document; campaign files never need deep nesting\n"
    ) in proc.stderr


@pytest.mark.parametrize("rel", KINDS[:3])  # submit reads no failures.yaml before it runs
def test_submit_dry_run_refuses_deep_nesting_at_its_place(demo: Path, rel: str) -> None:
    line, col = deepen(demo, rel)
    proc = campaign(demo, "submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run")
    assert proc.returncode == 2, proc.stderr
    assert f"{rel}:{line}:{col}: YAML nests deeper than {yamldoc.MAX_DEPTH} levels" in proc.stderr
    assert proc.stdout == ""


def test_check_json_names_the_place_in_the_message(demo: Path) -> None:
    line, col = deepen(demo, "manifests/example.yaml")
    proc = campaign(demo, "check", "--format", "json", "manifests/example.yaml")
    assert proc.returncode == 2
    assert f'"message": "manifests/example.yaml:{line}:{col}: YAML nests deeper' in proc.stdout
    assert '"path": "manifests/example.yaml"' in proc.stdout
