"""A user writes down what a failed smoke taught them: `campaign lesson add` in a campaign made by
`campaign new`, with the job's diagnosis from the ledger, then `campaign check` holds the format.

The ledger records are built and appended by the runner's own writer (an intent, a result, and a
status refresh whose array task carries the diagnosis `status --refresh` records)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml

from campaignops.model import ledger_writer as lw
from campaignops.model.jobspec import JobState
from tests.conftest import git

T0 = dt.datetime(2026, 11, 21, 9, 0, tzinfo=dt.timezone.utc)
TARGETS = ["lr0.1_s1", "lr0.01_s1"]


def oom_gpu_entry(root: Path) -> str:
    """The campaign's own catalog entry for a CUDA out-of-memory (whatever its id is now)."""
    data: Any = yaml.safe_load((root / "failures.yaml").read_text(encoding="utf-8"))
    return next(str(e["id"]) for e in data["failures"] if e["category"] == "oom-gpu")


def record_failed_smoke(root: Path, entry: str) -> None:
    """Job 4242: task 0 died of a CUDA OOM (diagnosed), task 1 completed."""
    failed = lw.task_fields(JobState(job_id="4242_0", state="FAILED", exit_code=1))
    failed["diagnosis"] = {"entry": entry, "category": "oom-gpu"}
    done = lw.task_fields(JobState(job_id="4242_1", state="COMPLETED", exit_code=0))
    lw.append(
        root,
        [
            lw.intent_record(
                ledger_id="L20261121T090000Z-0123456789ab",
                time=T0,
                campaign="demo",
                backend="local",
                stage="smoke",
                targets=TARGETS,
                fingerprint="sha256:" + "0" * 64,
                commit="0" * 40,
                manifest="manifests/example.yaml",
            ),
            lw.result_record(
                ledger_id="L20261121T090000Z-0123456789ab", time=T0, job_id="4242", state="PENDING"
            ),
            lw.state_record(
                ledger_id="L20261121T090000Z-0123456789ab",
                time=T0 + dt.timedelta(minutes=5),
                state=JobState(job_id="4242", state="FAILED", exit_code=1),
                tasks={0: failed, 1: done},
            ),
        ],
    )


def test_a_lesson_from_a_diagnosed_job_keeps_the_campaign_clean(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert run("check").code == 0  # the template's LESSONS.md passes LESSON
    # The template's file ends with the heading: a blank line, then the lesson.
    at = len((demo / "LESSONS.md").read_text(encoding="utf-8").splitlines()) + 2
    entry = oom_gpu_entry(demo)
    record_failed_smoke(demo, entry)
    assert run("render").code == 0  # STATUS.md, as the refresh re-renders it
    git(demo, "add", "-A")
    git(demo, "commit", "-qm", "ledger: the failed smoke")

    added = run(
        "lesson",
        "add",
        "smoke of lr0.1_s1 died at step 0",
        "halved the batch size in configs/example (abc1234)",
        "--job",
        "4242_0",
        "--today",
        "2026-11-21",
    )

    line = (
        f"- 2026-11-21 · smoke of lr0.1_s1 died at step 0 (job 4242_0) · "
        f"halved the batch size in configs/example (abc1234) · {entry}"
    )
    assert (added.code, added.err) == (0, "")
    assert added.out == (
        f"appended to LESSONS.md:{at}:\n{line}\nnext: commit it with the fix (git add LESSONS.md)\n"
    )
    text = (demo / "LESSONS.md").read_text(encoding="utf-8")
    assert text.endswith(f"## Lessons\n\n{line}\n")
    # Two lines added (a blank after the heading, the lesson), none changed.
    assert git(demo, "diff", "--numstat", "LESSONS.md").split() == ["2", "0", "LESSONS.md"]
    assert run("check").code == 0

    # The next lesson goes after it; the task that completed has no diagnosis: new.
    again = run("lesson", "add", "second try", "fine", "--job", "4242_1", "--today", "2026-11-21")
    assert again.code == 0
    lines = (demo / "LESSONS.md").read_text(encoding="utf-8").splitlines()
    assert lines[-2:] == [line, "- 2026-11-21 · second try (job 4242_1) · fine · new"]
    assert run("check").code == 0


def test_a_hand_broken_line_is_a_finding(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    path = demo / "LESSONS.md"
    at = len(path.read_text().splitlines()) + 2
    path.write_text(path.read_text() + "\n2026-11-20 - smoke died - fixed it - new\n")
    result = run("check")
    assert result.code == 1
    assert result.out.startswith(
        f"LESSONS.md:{at}:1: LESSON001 not a lesson line: 1 field(s) separated by ' · ', 4 expected\n"
    )


def test_refusals_leave_the_file_alone(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    path = demo / "LESSONS.md"
    before = path.read_bytes()
    cases = [
        (("a\nb", "fixed"), "what failed spans more than one line"),
        (("a · b", "fixed"), "what failed contains the field separator"),
        (("a", "b", "--entry", "cuda-om"), "no entry 'cuda-om' in failures.yaml"),
        (("a", "b", "--job", "999"), "no job '999' in the ledger"),
    ]
    for args, message in cases:
        result = run("lesson", "add", *args)
        assert result.code == 2, args
        assert message in result.err
    assert path.read_bytes() == before


def test_a_crlf_file_stays_crlf_and_a_mixed_one_is_refused(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    path = demo / "LESSONS.md"
    crlf = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    assert run("lesson", "add", "a", "b", "--today", "2026-11-21").code == 0
    assert path.read_bytes() == crlf + "\r\n- 2026-11-21 · a · b · new\r\n".encode()
    assert run("check", "--select", "LESSON").code == 0

    mixed = crlf + b"stray LF line\n"
    path.write_bytes(mixed)
    refused = run("lesson", "add", "a", "b")
    assert refused.code == 2
    assert "LESSONS.md: mixed line endings" in refused.err
    assert path.read_bytes() == mixed


def test_help_for_the_group_and_add(run, capsys) -> None:  # type: ignore[no-untyped-def]
    import pytest

    for argv in (["lesson", "--help"], ["lesson", "add", "--help"]):
        with pytest.raises(SystemExit) as exc:
            run(*argv)
        assert exc.value.code == 0
        assert "usage: campaign lesson" in capsys.readouterr().out
