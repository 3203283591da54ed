"""campaignops.learn.lesson_add: the checks before writing, and the write itself (lock, atomic replace)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from campaignops.core.errors import InputError, UsageError
from campaignops.learn import lesson_add as lessonlog
from campaignops.model import lessons

DAY = dt.date(2026, 11, 21)
CATALOG = """\
version: 1
failures:
  - id: cuda-oom
    category: oom-gpu
  - id: disk-full
    category: disk-full
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "campaign.yaml").write_text("name: t\n")
    (tmp_path / "failures.yaml").write_text(CATALOG)
    return tmp_path


def diagnosed(root: Path, entry: str) -> None:
    record = {
        "v": 1,
        "kind": "intent",
        "ledger_id": "L1",
        "time": "2026-11-21T09:00:00Z",
        "job_id": "7",
        "targets": ["a"],
        "state": "FAILED",
        "diagnosis": {"entry": entry, "category": "oom-gpu"},
    }
    (root / ".campaign").mkdir()
    (root / ".campaign" / "ledger.jsonl").write_text(json.dumps(record) + "\n")


def test_a_missing_file_is_made(root: Path) -> None:
    added = lessonlog.add(root=root, failed="a", fixed="b", day=DAY)
    assert (added.created_file, added.created_section, added.job) == (True, True, None)
    text = (root / "LESSONS.md").read_text()
    assert text.splitlines()[added.line - 1] == "- 2026-11-21 · a · b · new"
    assert [type(i) for i in lessons.scan(text)] == [lessons.Entry]


def test_bom_and_mode_are_kept(root: Path) -> None:
    path = root / "LESSONS.md"
    path.write_bytes(b"\xef\xbb\xbf## Lessons\n")
    path.chmod(0o640)
    lessonlog.add(root=root, failed="a", fixed="b", day=DAY, entry="disk-full")
    assert path.read_bytes() == "\ufeff## Lessons\n\n- 2026-11-21 · a · b · disk-full\n".encode()
    assert path.stat().st_mode & 0o777 == 0o640


def test_the_job_gives_the_entry_and_explicit_entry_wins(root: Path) -> None:
    diagnosed(root, "cuda-oom")
    added = lessonlog.add(root=root, failed="died", fixed="b", day=DAY, job="7")
    assert added.text == "- 2026-11-21 · died (job 7) · b · cuda-oom"
    added = lessonlog.add(root=root, failed="died", fixed="b", day=DAY, job="L1", entry="new")
    assert added.text == "- 2026-11-21 · died (job 7) · b · new"


def test_a_diagnosis_the_catalog_no_longer_has_is_refused(root: Path) -> None:
    diagnosed(root, "cuda-oom-old")
    with pytest.raises(UsageError, match=r"diagnosed as 'cuda-oom-old', which failures\.yaml"):
        lessonlog.add(root=root, failed="a", fixed="b", day=DAY, job="7")
    assert not (root / "LESSONS.md").exists()


def test_a_catalog_moved_by_the_policy_is_read(root: Path) -> None:
    (root / "campaign.yaml").write_text("name: t\npaths:\n  failures: [catalog/*.yaml]\n")
    (root / "catalog").mkdir()
    (root / "failures.yaml").rename(root / "catalog" / "gpu.yaml")
    assert lessonlog.catalog_ids(root) == ("cuda-oom", "disk-full")


def test_an_unparsable_catalog_is_an_input_error(root: Path) -> None:
    (root / "failures.yaml").write_text("failures: [\n")
    with pytest.raises(InputError, match=r"failures\.yaml: not valid YAML"):
        lessonlog.add(root=root, failed="a", fixed="b", day=DAY, entry="cuda-oom")
    # new needs no catalog
    assert lessonlog.add(root=root, failed="a", fixed="b", day=DAY).text.endswith("· new")


def test_a_link_out_of_the_campaign_is_refused(root: Path, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path_factory.mktemp("elsewhere") / "LESSONS.md"
    outside.write_text("## Lessons\n")
    (root / "LESSONS.md").symlink_to(outside)
    with pytest.raises(InputError, match="outside the campaign"):
        lessonlog.add(root=root, failed="a", fixed="b", day=DAY)
    assert outside.read_text() == "## Lessons\n"


def test_concurrent_adds_all_land(root: Path) -> None:
    (root / "LESSONS.md").write_text("# Lessons\n\n## Lessons\n\n## Notes\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "campaignops", "lesson", "add", f"writer {i}", "fixed"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(6)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    text = (root / "LESSONS.md").read_text()
    found = [e for e in lessons.scan(text) if isinstance(e, lessons.Entry)]
    assert sorted(e.failed for e in found) == [f"writer {i}" for i in range(6)]
    assert text.startswith("# Lessons\n\n## Lessons\n\n- ")
    assert text.endswith(" · fixed · new\n\n## Notes\n")
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_concurrent_writers_in_threads_all_land(root: Path) -> None:
    # Each write opens its own descriptor, so threads contend for the flock as processes do;
    # many rounds make an unlocked read-modify-write lose lines almost surely.
    import threading

    (root / "LESSONS.md").write_text("## Lessons\n")
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for k in range(15):
                lessonlog.write(root, f"- 2026-11-21 · t{n}-{k} · fixed · new")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    found = [
        e.failed
        for e in lessons.scan((root / "LESSONS.md").read_text())
        if isinstance(e, lessons.Entry)
    ]
    assert sorted(found) == sorted(f"t{n}-{k}" for n in range(8) for k in range(15))
