"""One status refresh of an ssh job of 1,000 cells on two boxes (500 each): its ssh calls and
its time.

Needs root (it starts the two real sshd of tests/sshboxes.py, with a user each). On each box it
writes the job directory the ssh backend would have written (job.json, script.sh) and a
state.json as the box executor leaves it when every task has ended, places the executor, and
writes this checkout's placement file; then it times ``python -m campaignops.backends.ssh.query
status`` (the argv the runner calls) with an ``ssh`` wrapper first on PATH counting the calls.

    python bench/ssh_status.py [--cells 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import sshboxes  # noqa: E402

from campaignops.backends.ssh import link as sshlink  # noqa: E402
from campaignops.backends.ssh.instances import Instance  # noqa: E402
from campaignops.backends.ssh.submit import deal  # noqa: E402

JOB = "ssh-1-abcdef"
WHEN = "2026-11-24T10:00:00+00:00"


def task(index: int) -> dict[str, object]:
    return {
        "state": "COMPLETED", "exit_code": 0, "start": WHEN, "end": WHEN, "attempts": 1,
        "gpu": index % 4, "reason": None, "pid": None, "ticks": None, "t0": None,
        "not_before": 0.0, "log_offset": 0, "stop": None, "term_at": None, "warned": False,
        "killed": False,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (useradd, sshd)", file=sys.stderr)
        return 2
    sshboxes.install()
    base = Path(tempfile.mkdtemp(prefix="bench-ssh-"))
    boxes = [sshboxes.make_box(n, base) for n in ("box1", "box2")]
    try:
        camp = base / "camp"
        source = sshlink.executor_source()
        executor = sshlink.executor_name(source)
        instances = {b.name: b for b in boxes}
        shares = deal(args.cells, [Instance(name=b.name, host=b.host, workdir="/") for b in boxes])
        placement = []
        for name, indices in shares.items():
            box = instances[name]
            state = box.workdir / ".campaignops"
            job_dir = state / "jobs" / JOB
            job_dir.mkdir(parents=True)
            (state / executor).write_bytes(source)
            (job_dir / "script.sh").write_text("#!/bin/bash\n")
            doc = {"job_id": JOB, "name": "bench.cells.smoke", "indices": indices}
            (job_dir / "job.json").write_text(json.dumps(doc))
            tasks = {str(i): task(i) for i in indices}
            done = {"job_id": JOB, "state": "COMPLETED", "reason": None, "started": WHEN,
                    "ended": WHEN, "tasks": tasks, "executor": {"pid": None, "ticks": None}}  # fmt: skip
            (job_dir / "state.json").write_text(json.dumps(done))
            subprocess.run(["chown", "-R", f"{box.user}:{box.user}", str(state)], check=True)
            placement.append(
                {
                    "instance": box.instance(),
                    "commit": "0" * 40,
                    "dir": f"{box.workdir}/camp",
                    "job_dir": str(job_dir),
                    "executor": str(state / executor),
                    "indices": indices,
                }
            )
        own = camp / ".campaign/ssh/generic-ssh"
        own.mkdir(parents=True)
        record = {"job_id": JOB, "name": "bench.cells.smoke", "placement": placement}
        (own / f"{JOB}.json").write_text(json.dumps(record))
        bindir, log = base / "bin", base / "ssh.log"
        bindir.mkdir()
        (bindir / "ssh").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /usr/bin/ssh "$@"\n')
        (bindir / "ssh").chmod(0o755)
        env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
        argv = [sys.executable, "-m", "campaignops.backends.ssh.query", "status"]
        argv += ["--root", str(camp), "--backend", "generic-ssh", JOB]
        times, calls = [], []
        for _ in range(args.repeat + 1):  # the first run opens the shared connections
            log.write_text("")
            t0 = time.perf_counter()
            out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            times.append(time.perf_counter() - t0)
            calls.append(len(log.read_text().splitlines()))
            answer = json.loads(out.stdout)
            got = answer["jobs"][0]["tasks"]
            assert len(got) == args.cells and all(t["state"] == "COMPLETED" for t in got.values())
        print(f"cells: {args.cells} on {len(boxes)} boxes; ssh calls per refresh: {calls}")
        print(f"first (new connections): {times[0]:.3f} s")
        rest = times[1:]
        print(
            f"shared connections: median {statistics.median(rest):.3f} s, "
            f"min {min(rest):.3f} s, max {max(rest):.3f} s over {len(rest)} runs"
        )
    finally:
        for box in boxes:
            sshboxes.remove_box(box)
    return 0


if __name__ == "__main__":
    sys.exit(main())
