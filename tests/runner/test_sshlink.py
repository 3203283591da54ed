"""The ssh transport against two real sshd (tests/sshboxes.py): the argv, bounded retries on
ssh's own failure, the deploy at a commit (never the working tree), and the executor placed by
content name, never overwritten."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh.instances import Instance
from campaignops.core.errors import CampaignError
from tests.conftest import git


def instance(box: Any) -> Instance:
    return Instance(
        name=box.name,
        host=box.host,
        port=box.port,
        identity=str(box.identity),
        known_hosts=str(box.known_hosts),
        workdir=str(box.workdir),
    )


def test_argv_pins_the_host_key_and_bounds_a_dead_link(tmp_path: Path) -> None:
    box = Instance(
        name="a",
        host="root@203.0.113.7",
        port=20544,
        identity="/k/id",
        known_hosts="/k/known",
        workdir="/workspace",
    )
    assert sshlink.ssh_argv(box, "true", control=tmp_path) == [
        "ssh", "-T", "-p", "20544", "-i", "/k/id", "-o", "IdentitiesOnly=yes",
        "-o", "UserKnownHostsFile=/k/known",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "ConnectTimeout=10",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=3",
        "-o", "LogLevel=ERROR",
        "-o", "ControlMaster=auto",
        "-o", "ControlPersist=60",
        "-o", f"ControlPath={tmp_path}/%C",
        "--", "root@203.0.113.7", "true",
    ]  # fmt: skip
    bare = Instance(name="b", host="gpu-box", workdir="/w")
    assert sshlink.ssh_argv(bare, "true") == [
        "ssh", "-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
        "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
        "-o", "LogLevel=ERROR", "--", "gpu-box", "true",
    ]  # fmt: skip


@pytest.mark.ssh
def test_call_returns_the_remote_exit_and_retries_only_ssh_failures(ssh_boxes: Any) -> None:
    box = instance(ssh_boxes[0])
    answer = sshlink.call(box, "echo $USER; echo oops >&2; exit 3")
    assert (answer.returncode, answer.stdout, answer.stderr, answer.attempts) == (
        3,
        f"{ssh_boxes[0].user}\n",
        "oops\n",
        1,
    )
    dead = Instance(
        name="gone",
        host=box.host,
        port=1,  # nothing listens: ssh exits 255 every time
        identity=box.identity,
        known_hosts=box.known_hosts,
        workdir=box.workdir,
    )
    slept: list[float] = []
    with pytest.raises(sshlink.Unreachable) as caught:
        sshlink.call(dead, "true", sleep=slept.append)
    assert slept == [1.0, 2.0]
    assert "instance gone" in caught.value.message and "after 3 attempts" in caught.value.message


@pytest.mark.ssh
def test_a_changed_host_key_is_refused(ssh_boxes: Any, tmp_path: Path) -> None:
    other = ssh_boxes[1]
    wrong = tmp_path / "known_hosts"
    # box2's key pinned for box1's port: the reused-port case of a re-rented box.
    key = other.known_hosts.read_text().split()[1:]
    wrong.write_text(f"[127.0.0.1]:{ssh_boxes[0].port} {' '.join(key)}\n")
    box = Instance(
        name="pinned",
        host=ssh_boxes[0].host,
        port=ssh_boxes[0].port,
        identity=str(ssh_boxes[0].identity),
        known_hosts=str(wrong),
        workdir="/tmp",
    )
    # A control directory of its own: box1's shared connection would skip the key check.
    control = Path(tempfile.mkdtemp(prefix="cks", dir="/tmp"))
    try:
        with pytest.raises(sshlink.Unreachable) as caught:
            sshlink.call(box, "true", attempts=1, control=control)
    finally:
        shutil.rmtree(control)
    assert caught.value.message.startswith("instance pinned (")
    assert "its host key is not the one pinned in" in caught.value.message
    assert caught.value.hint.startswith("compare the key's fingerprint")
    # A refusal is the same every time: never retried, never slept on.
    slept: list[float] = []
    stranger = Instance(
        name="stranger",
        host="root@127.0.0.1",
        port=ssh_boxes[0].port,
        identity=str(ssh_boxes[0].identity),
        known_hosts=str(ssh_boxes[0].known_hosts),
        workdir="/tmp",
    )
    with pytest.raises(sshlink.Unreachable) as refused:
        sshlink.call(stranger, "true", sleep=slept.append)
    assert slept == [] and "the box refused the login" in refused.value.message


@pytest.mark.ssh
def test_deploy_sends_the_commit_tree_once(ssh_boxes: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "run.sh").write_text("echo committed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    commit = git(repo, "rev-parse", "HEAD").strip()
    (repo / "run.sh").write_text("echo edited, not committed\n")
    (repo / "untracked.txt").write_text("never sent\n")
    box = instance(ssh_boxes[0])
    target = sshlink.deploy_dir(box, "camp", commit)
    tree = sshlink.archive(repo, commit)
    first = sshlink.call(box, sshlink.deploy_command(target), stdin=tree)
    assert first.returncode == 0, first.stderr
    listing = sshlink.call(box, f"cd {target} && ls -A && cat run.sh && readlink runs").stdout
    assert listing == "run.sh\nruns\necho committed\n../runs\n"  # runs: the durable root
    # Again (another submission of the same commit): the tree is kept as it is.
    sshlink.call(box, f"echo mine > {target}/marker")
    again = sshlink.call(box, sshlink.deploy_command(target), stdin=tree)
    assert again.returncode == 0
    assert sshlink.call(box, f"cat {target}/marker; ls -d {target}*").stdout == f"mine\n{target}\n"


@pytest.mark.ssh
def test_the_executor_is_placed_by_content_and_never_overwritten(ssh_boxes: Any) -> None:
    # A stand-in executor that only prints its arguments: this test is about the files.
    source = b'import json, sys\nprint(json.dumps({"pid": 1, "argv": sys.argv[1:]}))\n'
    name = sshlink.executor_name(source)
    assert name == f"boxexec-{hashlib.sha256(source).hexdigest()[:12]}.pyz"
    box = instance(ssh_boxes[1])
    job = "ssh-1-abcdef"
    files = {
        name: source,
        f"jobs/.{job}.tmp/job.json": b'{"job_id": "ssh-1-abcdef"}\n',
        f"jobs/.{job}.tmp/script.sh": b"#!/bin/bash\n",
    }
    command = sshlink.place_and_start_command(box, name, job)
    answer = sshlink.call(box, command, stdin=sshlink.job_tar(files))
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout) == {
        "pid": 1,
        "argv": ["start", f"{box.workdir}/.campaignops/jobs/{job}"],
    }
    # The same name with other bytes (never happens: the name is the hash) is not written.
    repeat = {**files, name: b"raise SystemExit('overwritten')\n"}
    answer = sshlink.call(box, command, stdin=sshlink.job_tar(repeat))
    assert json.loads(answer.stdout)["argv"][0] == "start"
    state = f"{box.workdir}/.campaignops"
    listing = sshlink.call(box, f"cd {state} && ls -A . jobs jobs/{job}").stdout
    assert listing == f".:\n{name}\njobs\n\njobs:\n{job}\n\njobs/{job}:\njob.json\nscript.sh\n"
    with pytest.raises(CampaignError):
        sshlink.checked(sshlink.call(box, "exit 4"), box, "probe")


def test_archive_of_a_missing_commit_says_so(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(CampaignError, match="git archive"):
        sshlink.archive(tmp_path, "0" * 40)
