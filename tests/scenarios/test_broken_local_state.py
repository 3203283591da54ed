"""Story: a stray or damaged ``.campaign/local/local-N/`` never breaks the local backend.

A submit killed between creating its job directory and writing ``job.json`` (or a full disk, or a
hand edit) leaves a directory the readers cannot use. It once made every later submit, dry run
and refresh fail with ``KeyError: 'name'`` inside "refused: Traceback …". Each broken entry is
now skipped and named (``localexec siblings`` reports it; a ledger job whose directory is
broken reads as UNKNOWN with the reason) while every command goes on working.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from campaignops.backends.local import machine as local
from campaignops.model import ledger
from tests import waiting

STATE = Path(local.STATE_DIR)
JOB_KEYS = {"job_id": "local-70", "name": "n", "comment": "c", "submitted": "t"}
BROKEN: dict[str, tuple[str | None, str]] = {
    "no job.json": (None, "no job.json"),
    "garbage": ("{garbage", "job.json is not JSON"),
    "not an object": ("[1, 2]\n", "job.json is not a JSON object"),
    "missing keys": ('{"job_id": "local-70"}\n', "job.json has no 'name'"),
    "wrong type": (
        json.dumps({**JOB_KEYS, "timelimit": None, "size": "4"}),
        "job.json: 'size' is '4', not an integer",
    ),
    "not UTF-8": ('{"name": "\xff"}', "job.json cannot be read (UnicodeDecodeError)"),
    "nested too deep": ("[" * 100_000 + "]" * 100_000, "job.json nests too deeply"),
}


def siblings(root: Path) -> subprocess.CompletedProcess[str]:
    argv = local.sibling_argv(["demo.example.smoke"], state_root=str(root / STATE))
    return subprocess.run(
        [*argv[:-1], "--all", argv[-1]], capture_output=True, text=True, check=False
    )


def break_dir(job_dir: Path, content: str | None) -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    if content is not None:
        data = content.encode("latin-1") if "\xff" in content else content.encode()
        (job_dir / "job.json").write_bytes(data)


def wait_finished(run, root: Path) -> ledger.Job:  # type: ignore[no-untyped-def]
    return waiting.settled(run, root, timeout=60)


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_broken_job_directory_is_skipped_by_every_command(demo: Path, run, kind: str) -> None:  # type: ignore[no-untyped-def]
    content, why = BROKEN[kind]
    break_dir(demo / STATE / "local-70", content)
    listed = siblings(demo)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {
        "jobs": [],
        "skipped": [f"skipped {STATE}/local-70: {why}"],
    }
    assert listed.stderr == f"localexec siblings: skipped {STATE}/local-70: {why}\n"

    dry = run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run")
    assert (dry.code, dry.err) == (0, "")
    assert "dry run: nothing submitted; a submit would pass every gate" in dry.out
    done = run("submit", "manifests/example.yaml", "--stage", "smoke")
    assert done.code == 0, done.err
    job = wait_finished(run, demo)
    assert job.state == "COMPLETED"
    # The counter never hands out the stray directory's number again.
    assert job.job_id is not None and job.job_id.startswith("local-71-")
    assert run("status", "--refresh").code == 0


def test_a_ledger_job_whose_directory_breaks_reads_unknown(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("submit", "manifests/example-queue.yaml", "--stage", "smoke", "--commit")
    assert done.code == 0, done.err
    job = ledger.read(demo).jobs[-1]
    assert job.job_id is not None
    job_dir = demo / STATE / job.job_id
    (job_dir / "job.json").write_text("{garbage")
    query = local.query_argvs([job.job_id], state_root=str(demo / STATE))[0]
    seen = json.loads(subprocess.run(query, capture_output=True, text=True, check=True).stdout)
    assert seen == {
        "jobs": [
            {
                "job_id": job.job_id,
                "state": "UNKNOWN",
                "reason": f"skipped {STATE}/{job.job_id}: job.json is not JSON",
            }
        ]
    }
    before = (demo / ".campaign/ledger.jsonl").read_bytes()
    refreshed = run("status", "--refresh")
    assert refreshed.code == 0, refreshed.err
    assert "Traceback" not in refreshed.err
    # UNKNOWN is never recorded: the ledger keeps what it knew.
    assert (demo / ".campaign/ledger.jsonl").read_bytes() == before
    assert ledger.read(demo).jobs[-1].state == job.state
    again = run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run")
    assert again.code == 0, again.err


def test_a_broken_state_json_reads_unknown_not_a_guess(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    done = run("submit", "manifests/example-queue.yaml", "--stage", "smoke")
    assert done.code == 0, done.err
    assert wait_finished(run, demo).state == "COMPLETED"
    job_id = ledger.read(demo).jobs[-1].job_id
    assert job_id is not None
    (demo / STATE / job_id / "state.json").write_text('{"state": "DONE?", "tasks": 3}')
    query = local.query_argvs([job_id], state_root=str(demo / STATE))[0]
    seen = json.loads(subprocess.run(query, capture_output=True, text=True, check=True).stdout)
    reason = f"skipped {STATE}/{job_id}: state.json: 'state' is 'DONE?', not a job state"
    assert seen == {"jobs": [{"job_id": job_id, "state": "UNKNOWN", "reason": reason}]}
    cancel = subprocess.run(
        local.cancel_argv([job_id], state_root=str(demo / STATE)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert cancel.returncode == 1
    assert cancel.stderr.startswith(f"localexec cancel: cannot cancel {STATE}/{job_id}: ")
    assert "Traceback" not in cancel.stderr
    dry = run("submit", "manifests/example.yaml", "--stage", "smoke", "--dry-run")
    assert (dry.code, dry.err) == (0, "")
