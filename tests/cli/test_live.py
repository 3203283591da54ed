"""Progress on a terminal (issue 20): `status --watch` keeps one live line per stage (done /
running / pending / failed, elapsed) where stderr is a terminal, and prints none of it elsewhere."""

from __future__ import annotations

import dataclasses
import io
import re
import sys
import time
from pathlib import Path

import pytest

from campaignops import cli
from campaignops.backends import registry
from campaignops.cli.live import Live
from campaignops.model import ledger
from campaignops.runner import progress, status


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_live_lines_are_rewritten_on_a_terminal_and_absent_elsewhere() -> None:
    tty, pipe = Terminal(), io.StringIO()
    for stream in (tty, pipe):
        live = Live(stream)
        live.show(["a 1", "b 1"])
        live.note("warning: x")
        live.show(["a 2", "b 2"])
        live.show(["a 3", "b 3"])
    assert tty.getvalue() == (
        "a 1\nb 1\n\x1b[2F\x1b[Jwarning: x\na 2\nb 2\n\x1b[2F\x1b[Ja 3\nb 3\n"
    )
    assert pipe.getvalue() == "warning: x\n"  # no progress where nobody watches


def _job(ledger_id: str, stage: str, tasks: dict[str, str], **record: object) -> ledger.Job:
    targets = [f"t{i}" for i in range(len(tasks))]
    fields = {
        "stage": stage,
        "targets": targets,
        "tasks": {i: {"state": s} for i, s in tasks.items()},
    }
    return ledger.Job(
        ledger_id=ledger_id, record={**fields, **record}, first_line=1, first_time=None
    )


def test_each_watched_stage_counts_its_tasks() -> None:
    jobs = [
        _job("A", "production", {"0": "COMPLETED", "1": "RUNNING", "2": "PENDING", "3": "FAILED"}),
        _job("B", "smoke", {"0": "COMPLETED", "1": "OUT_OF_MEMORY"}),
        _job("C", "smoke", {"0": "RUNNING"}),  # not watched
    ]
    found = progress.of(jobs, {"A", "B"})
    assert found == (
        progress.StageProgress("smoke", done=1, failed=1),
        progress.StageProgress("production", done=1, running=1, pending=1, failed=1),
    )
    assert progress.lines(found, 65) == [
        "smoke       1 done · 0 running · 0 pending · 1 failed · 1m 05s",
        "production  1 done · 1 running · 1 pending · 1 failed · 1m 05s",
    ]


def test_watch_on_a_terminal_shows_the_stage_lines(  # type: ignore[no-untyped-def]
    demo: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    assert cli.main(["submit", "manifests/example.yaml", "--stage", "smoke"]) == 0
    capsys.readouterr()
    rounds: list[float] = []

    def pause(seconds: float) -> None:  # short real waits, and a bound on the rounds
        rounds.append(seconds)
        assert len(rounds) < 300, "the smoke did not end"
        time.sleep(seconds)

    monkeypatch.setattr(status, "_sleep", pause)
    quick = tuple(
        dataclasses.replace(k, watch_pause_s=0.2) if k.name == "local" else k
        for k in registry.KINDS
    )
    monkeypatch.setattr(registry, "KINDS", quick)
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["status", "--watch"]) == 0
    shown = tty.getvalue()
    last = shown.rsplit("\x1b[J", 1)[-1]
    assert re.match(r"smoke  4 done · 0 running · 0 pending · 0 failed · \d+s\n", last), shown
    assert last.splitlines()[-1].endswith(", 0 job(s) unfinished")
    assert shown.count("\x1b[J") == len(rounds)  # each later round rewrote the lines in place


def test_new_and_update_show_their_steps_on_a_terminal_only(  # type: ignore[no-untyped-def]
    demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["update", "--dry-run"]) == 0
    steps = re.findall(r"campaign update: ([^…\n]+) …", tty.getvalue())
    assert [s.split(" ")[0] for s in steps] == ["reading", "copier", "re-rendering"], steps
    assert tty.getvalue().endswith("\x1b[J")  # the last step cleared once done
    monkeypatch.chdir(tmp_path)
    tty.truncate(0)
    tty.seek(0)
    assert cli.main(["new", "fresh", "--defaults"]) == 0
    assert re.findall(r"campaign new: ([^…\n]+) …", tty.getvalue()) == [
        "rendering the template with copier",
        "git init and the first commit",
    ]
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert cli.main(["new", "other", "--defaults"]) == 0
    assert "campaign new:" not in pipe.getvalue()
    capsys.readouterr()
