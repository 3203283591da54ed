"""`campaign status --watch`'s pause between rounds: a scheduler's minute, a local job's seconds."""

from __future__ import annotations

from pathlib import Path

from campaignops.backends.local.kind import KIND as LOCAL
from campaignops.model import ledger
from campaignops.runner import watchpace

PAGES = {
    "local": "---\nkind: local\nscheduler: none\n---\n",
    "alpine": "---\nkind: slurm\nscheduler: slurm\n---\n",
    "box": "---\nkind: ssh\nscheduler: none\n---\n",
}


def _job(backend: str | None) -> ledger.Job:
    record = {"backend": backend} if backend else {}
    return ledger.Job(ledger_id=f"L-{backend}", record=record, first_line=1, first_time=None)


def _root(tmp_path: Path) -> Path:
    (tmp_path / "backends").mkdir()
    for name, text in PAGES.items():
        (tmp_path / "backends" / f"{name}.md").write_text(text, encoding="utf-8")
    return tmp_path


def test_only_local_jobs_are_looked_at_every_few_seconds(tmp_path: Path) -> None:
    root = _root(tmp_path)
    pause = LOCAL.watch_pause_s
    assert watchpace.pause_s(root, [_job("local"), _job(None)], 60.0) == pause
    assert watchpace.pause_s(root, [_job("local")], 1.0) == 1.0  # never slower than asked


def test_a_job_on_a_scheduler_or_a_box_keeps_the_interval(tmp_path: Path) -> None:
    root = _root(tmp_path)
    for other in ("alpine", "box", "no-such-page"):
        assert watchpace.pause_s(root, [_job("local"), _job(other)], 60.0) == 60.0, other
    assert watchpace.pause_s(root, [], 300.0) == 300.0  # only retries waiting: their delay
