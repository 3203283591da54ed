"""Shared fixtures: a clean campaign copied to a temp dir, and an in-process CLI runner."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaignops import cli

FIXTURES = Path(__file__).parent / "fixtures"
# The date every test ages stamps against, so the suite does not rot with the calendar.
TODAY = dt.date(2026, 11, 21)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, list[dict[str, object]]]:
        data: dict[str, list[dict[str, object]]] = json.loads(self.out)
        return data

    def ids(self) -> list[str]:
        return [str(f["id"]) for f in self.json()["findings"]]

    def where(self) -> list[tuple[str, int, str]]:
        """(path, line, id) of each finding, from JSON output."""
        return [
            (str(f["path"]), int(str(f["line"])), str(f["id"])) for f in self.json()["findings"]
        ]


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of tests/fixtures/clean, as the current directory."""
    root = tmp_path / "campaign"
    shutil.copytree(FIXTURES / "clean", root, symlinks=True)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `campaign ARGS…` in-process; `check` gets --today pinned unless given."""

    def _run(*args: str) -> Result:
        argv: Sequence[str] = list(args)
        if argv and argv[0] == "check" and "--today" not in argv:
            argv = [*argv, "--today", TODAY.isoformat()]
        code = cli.main(argv)
        captured = capsys.readouterr()
        return Result(code=code, out=captured.out, err=captured.err)

    return _run


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a fixed identity; returns stdout."""
    proc = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.org",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout


@pytest.fixture
def repo(campaign: Path) -> Path:
    """The clean campaign as a git repository with one commit."""
    git(campaign, "init", "-q")
    git(campaign, "add", "-A")
    git(campaign, "commit", "-q", "-m", "initial campaign")
    return campaign
