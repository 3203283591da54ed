"""The real Grid Engine cell (dev/gridengine_cell.py) answers as the backend expects: an array
submitted with ``qsub -terse -t 1-3`` runs, ``qstat -u <user> -xml`` lists it, and ``qacct``
has one record per task once it ended."""

from __future__ import annotations

import getpass
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gridengine


def _out(*argv: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_an_array_runs_and_qstat_and_qacct_answer(gridengine_cell: Any, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    job = tmp_path / "task.sh"
    job.write_text('#!/bin/bash\necho "task $SGE_TASK_ID of $JOB_ID"\nsleep 1\n')
    job.chmod(0o755)
    submitted = _out("qsub", "-terse", "-t", "1-3", "-N", "cell.check", "-cwd", "-j", "y",
                     "-o", str(tmp_path), str(job), cwd=tmp_path).strip()  # fmt: skip
    job_id, _, tasks = submitted.partition(".")
    assert tasks == "1-3:1"
    xml = _out("qstat", "-u", getpass.getuser(), "-xml")
    assert f"<JB_job_number>{job_id}</JB_job_number>" in xml
    deadline = time.monotonic() + 60
    records = 0
    while time.monotonic() < deadline:
        proc = subprocess.run(["qacct", "-j", job_id], capture_output=True, text=True, check=False)
        records = proc.stdout.count("\ntaskid ")
        if records == 3:
            break
        time.sleep(0.3)
    assert records == 3
    logs = sorted(p.name for p in tmp_path.glob("cell.check.o*"))
    assert logs == [f"cell.check.o{job_id}.{i}" for i in (1, 2, 3)]
