"""Story: a rented box turns hostile after its tasks ran, and `campaign pull` still writes nothing
but the cells' own outputs (docs/robustness.md, Trust boundaries: pulled files).

Real sshd and real rsync, the campaign of tests/scenarios/test_ssh.py (three cells, two boxes).
box1 is made hostile the way its owner could: its executor (the program `campaign pull` asks
for the outputs) is replaced by one that lists every path shape of the issue, each with its
right size and SHA-256, and the files are planted in the deploy directory (as root, so a device
node and a set-uid-root file too). box2 stays honest: its cell must still come home.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from campaignops.model import ledger
from tests.scenarios import test_ssh as story

camp = story.camp
ssh_log = story.ssh_log
refreshed_until_finished = story.refreshed_until_finished

pytestmark = pytest.mark.ssh

TRACKED = (
    ".pre-commit-config.yaml",
    "campaign.yaml",
    "scripts/run_one.v1.sh",
    ".github/workflows/checks.yml",
    "README.md",
)
FSMONITOR = "[core]\n\tfsmonitor = touch /tmp/campaignops-owned-by-the-box\n"


def digest(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def plant(deploy: Path, owner: int) -> list[dict[str, Any]]:
    """Every path shape of the issue in box1's deploy directory; the hostile list for it."""
    listed: list[dict[str, Any]] = []

    def put(rel: str, text: str) -> None:
        path = deploy / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o644)
        listed.append({"path": rel, **digest(path)})

    for rel in TRACKED[:-1]:  # overwrite tracked files, a locked wrapper among them
        put(rel, "echo owned\n")
    put("sub/.git/config", FSMONITOR)
    put("runs/smoke/x/.git/config", FSMONITOR)
    put("runs/smoke/.GIT/config", FSMONITOR)
    # README.md, as committed (the deploy directory is the commit's tree): the right digest.
    listed.append({"path": "README.md", **digest(deploy / "README.md")})
    smoke = deploy / "runs/smoke"
    for name, target in (("shadow", "/etc/shadow"), ("kcore", "/proc/kcore")):
        (smoke / name).symlink_to(target)
        listed.append({"path": f"runs/smoke/{name}", "size": 1, "sha256": "0" * 64})
    os.mkfifo(smoke / "fifo")
    os.mknod(smoke / "dev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    (smoke / "suid").write_bytes(Path("/bin/true").read_bytes())
    os.chown(smoke / "suid", 0, 0)
    (smoke / "suid").chmod(0o4755)
    for name in ("fifo", "dev", "suid"):
        listed.append({"path": f"runs/smoke/{name}", "size": 1, "sha256": "0" * 64})
    # The cell's own declared output, replaced by a link to a file with its digest listed.
    (smoke / "a").unlink()
    (smoke / "a").symlink_to("/etc/passwd")
    listed.append({"path": "runs/smoke/a", **digest(Path("/etc/passwd"))})
    for path in (deploy / "sub", deploy / "runs/smoke/x", deploy / "runs/smoke/.GIT"):
        for p in (path, *path.rglob("*")):
            os.chown(p, owner, owner)
    return listed


def hostile_executor(path: Path, answer: dict[str, Any]) -> None:
    """The box's executor, replaced: ``outputs`` answers the hostile list for every task."""
    path.write_text(f"print({json.dumps(answer)!r})\n")


def tree(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under the checkout but .git: its lstat mode and, for a file, its bytes."""
    found: dict[str, tuple[int, bytes | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(root) and d == ".git")]
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            rel = str(path.relative_to(root))
            found[rel] = (mode, path.read_bytes() if stat.S_ISREG(mode) else None)
    return found


def test_a_hostile_box_writes_nothing_but_the_cells_outputs(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, ssh_log: Path
) -> None:
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    job = refreshed_until_finished(run, camp)
    assert job.state == "COMPLETED", job.record
    entry = job.record["placement"][0]
    assert entry["instance"]["name"] == "box1" and entry["indices"] == [0, 2]
    deploy = Path(entry["dir"])
    owner = deploy.stat().st_uid
    listed = plant(deploy, owner)
    # Cell c's output is lost on the box; the box vouches for README.md instead, with the
    # committed file's right digest (on main, that made the cell "verified").
    (deploy / "runs/smoke/c").unlink()
    readme = {"path": "README.md", **digest(deploy / "README.md")}
    hostile_executor(Path(entry["executor"]), {"0": listed, "2": [readme]})
    before = tree(camp)

    pulled = run("pull", "--format", "json")
    after = tree(camp)
    # Nothing but box2's output and the ledger's new pull record changed in the checkout.
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert changed == {"runs", "runs/smoke", "runs/smoke/b", ".campaign/ledger.jsonl"}, changed
    for rel in TRACKED:
        assert before[rel] == after[rel], rel
    assert not (camp / "sub").exists()
    # Only regular files arrived: no link, FIFO, device or set-uid file anywhere.
    for rel, (mode, _) in after.items():
        assert stat.S_ISREG(mode) or stat.S_ISDIR(mode), rel
        assert not mode & (stat.S_ISUID | stat.S_ISGID), rel
    assert pulled.code == 1, pulled.out + pulled.err
    cells = {c["target"]: c for c in json.loads(pulled.out)["cells"]}
    assert cells["b"]["verdict"] == "verified"  # the honest box's cell came home
    for name in ("a", "c"):
        assert cells[name]["verdict"] != "verified", cells[name]
        assert cells[name]["files"] == [f"runs/smoke/{name}"]  # its declared output, no other
    ignored = set(cells["a"]["ignored"])
    assert {"README.md", ".pre-commit-config.yaml", "sub/.git/config"} <= ignored
    assert {"runs/smoke/shadow", "runs/smoke/x/.git/config", "runs/smoke/suid"} <= ignored
    assert cells["c"]["ignored"] == ["README.md"] and cells["c"]["verdict"] == "missing"

    assert not (camp / ".campaign/ssh/.pull").exists()  # the staging directories are gone
    tasks = ledger.read(camp).jobs[-1].record["tasks"]
    assert tasks["0"]["pulled"] != "verified" and tasks["2"]["pulled"] != "verified"
    assert tasks["1"]["pulled"] == "verified"
    refused = run("release", "box1")
    assert refused.code == 1, refused.out + refused.err


FAKE_RSYNC = """#!/bin/sh
# Records its arguments, then waits to be killed with the pull (a copy in progress).
echo "$@" > {log}
sleep 300
"""


def test_a_killed_pull_leaves_no_file_list_in_tmp(  # type: ignore[no-untyped-def]
    camp: Path, run, ssh_boxes, tmp_path: Path
) -> None:
    assert run("submit", "manifests/naps.yaml", "--stage", "smoke").code == 0
    assert refreshed_until_finished(run, camp).state == "COMPLETED"
    bindir = tmp_path / "rsync-bin"
    bindir.mkdir()
    log = tmp_path / "rsync.args"
    (bindir / "rsync").write_text(FAKE_RSYNC.format(log=log))
    (bindir / "rsync").chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    pull = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from campaignops import cli; sys.exit(cli.main())",
            "pull",
        ],
        cwd=camp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not log.exists() or not log.read_text().strip():
            assert pull.poll() is None and time.monotonic() < deadline, "rsync never started"
            time.sleep(0.1)
        args = log.read_text().split()
    finally:
        os.killpg(pull.pid, signal.SIGKILL)  # the pull and its rsync, as a kill -9 would
        pull.wait()
    lists = [a.partition("=")[2] for a in args if a.startswith("--files-from=")]
    assert lists, args
    for listed in lists:
        assert listed == "-" or not Path(listed).exists(), f"{listed} left behind"
