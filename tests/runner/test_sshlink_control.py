"""The ssh control directory against another real Unix user (issue 16, item 2).

Anyone who can enter or replace the directory of the shared connection's socket can move the
master socket aside and answer our ssh calls. Here a second unprivileged user (the attacker)
pre-creates ``/tmp/campaignops-ssh-<uid>`` for a first one (the victim), who then makes a real
ssh call to a box (tests/sshboxes.py) with the product's code: its ssh argv (a logging ``ssh``
first on PATH) must name no ControlPath there, and the call must still work, on its own
connection. Root only (useradd, setpriv); skipped elsewhere, except under CI=true.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.ssh import link as sshlink

pytestmark = pytest.mark.ssh

# What the victim runs: the product's own control() and call() to the box, as JSON.
VICTIM = """
import json, sys
from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh.instances import Instance
box = Instance(**json.loads(sys.argv[1]))
path = sshlink.control_dir()
warning = sshlink.control().warning if hasattr(sshlink, "control") else None  # main had none
answer = sshlink.call(box, "echo reached", attempts=1)
print(json.dumps({"path": None if path is None else str(path),
                  "warning": warning, "stdout": answer.stdout, "code": answer.returncode}))
"""


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path

    def run(
        self, argv: list[str], env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``argv`` as this user (setpriv: its uid, gid, no supplementary groups)."""
        who = [
            "setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--",
        ]  # fmt: skip
        return subprocess.run(
            [*who, *argv], capture_output=True, text=True, env=env, timeout=60, cwd="/"
        )

    def processes(self) -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == self.uid:
                        found.append(int(entry.name))
                except OSError:
                    continue
        return found


def _user(prefix: str) -> User:
    name = f"{prefix}{secrets.token_hex(3)}"
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", name], check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    return User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def _gone(user: User) -> None:
    """End what the user still runs (a master ssh the old code left behind), then delete it."""
    deadline = time.monotonic() + 10
    while user.processes() and time.monotonic() < deadline:
        for pid in user.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    subprocess.run(["userdel", "-r", user.name], capture_output=True)


@pytest.fixture
def pair(ssh_boxes: Any) -> Iterator[tuple[User, User]]:
    """(victim, attacker): two fresh unprivileged users; their /tmp control paths removed."""
    victim, attacker = _user("cvic"), _user("catk")
    target = Path(f"/tmp/campaignops-ssh-{victim.uid}")
    try:
        yield victim, attacker
    finally:
        _gone(victim)
        _gone(attacker)
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.is_dir():
            shutil.rmtree(target)


def _victims_box(victim: User, box: Any) -> dict[str, Any]:
    """box1 as the victim reaches it: the client key and pinned host key copied to its home."""
    own = victim.home / "box"
    own.mkdir(mode=0o700)
    shutil.copy(box.identity, own / "id")
    shutil.copy(box.known_hosts, own / "known_hosts")
    for path in (own, own / "id", own / "known_hosts"):
        os.chown(path, victim.uid, victim.gid)
    (own / "id").chmod(0o600)
    return {
        "name": box.name,
        "host": box.host,
        "port": box.port,
        "identity": str(own / "id"),
        "known_hosts": str(own / "known_hosts"),
        "workdir": str(box.workdir),
    }


def _as_victim(
    victim: User, box: Any, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The victim's call to box1: what the product answered, and every ssh argv it ran."""
    bindir = victim.home / "bin"
    bindir.mkdir(exist_ok=True)
    log = victim.home / "ssh.log"
    (bindir / "ssh").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /usr/bin/ssh "$@"\n')
    (bindir / "ssh").chmod(0o755)
    log.write_text("")
    os.chown(log, victim.uid, victim.gid)
    base = {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(victim.home),
        "PYTHONPATH": str(Path(sshlink.__file__).resolve().parents[3]),
    }
    done = victim.run(
        [sys.executable, "-c", VICTIM, json.dumps(_victims_box(victim, box))],
        env=base | (env or {}),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), log.read_text().splitlines()


def _attacker_makes(attacker: User, *argv: str) -> None:
    done = attacker.run(list(argv))
    assert done.returncode == 0, done.stderr


def _refused(victim: User, box: Any, target: Path, owner: str) -> None:
    answer, argvs = _as_victim(victim, box)
    assert argvs and not any("Control" in argv for argv in argvs), argvs
    assert answer["stdout"] == "reached\n" and answer["code"] == 0
    assert answer["path"] is None, answer
    assert str(target) in answer["warning"] and owner in answer["warning"], answer["warning"]
    # Nothing of ours was bound there: no socket under the directory the attacker set up.
    seen = target.resolve()
    sockets = (
        [p for p in seen.iterdir() if stat.S_ISSOCK(p.lstat().st_mode)] if seen.is_dir() else []
    )
    assert sockets == [], sockets


def test_another_users_directory_is_refused(pair: tuple[User, User], ssh_boxes: Any) -> None:
    victim, attacker = pair
    target = Path(f"/tmp/campaignops-ssh-{victim.uid}")
    _attacker_makes(attacker, "mkdir", "-m", "0777", str(target))
    _refused(victim, ssh_boxes[0], target, f"belongs to uid {attacker.uid}")


def test_another_users_private_directory_is_refused(
    pair: tuple[User, User], ssh_boxes: Any
) -> None:
    victim, attacker = pair
    target = Path(f"/tmp/campaignops-ssh-{victim.uid}")
    _attacker_makes(attacker, "mkdir", "-m", "0700", str(target))
    _refused(victim, ssh_boxes[0], target, f"belongs to uid {attacker.uid}")


def test_a_symbolic_link_is_refused_even_to_a_private_directory_of_ours(
    pair: tuple[User, User], ssh_boxes: Any
) -> None:
    victim, attacker = pair
    target = Path(f"/tmp/campaignops-ssh-{victim.uid}")
    # The link leads to a directory the victim owns, mode 0700: only lstat tells them apart.
    mine = victim.home / "sockets"
    mine.mkdir(mode=0o700)
    os.chown(mine, victim.uid, victim.gid)
    _attacker_makes(attacker, "ln", "-s", str(mine), str(target))
    _refused(victim, ssh_boxes[0], target, "symbolic link")


def test_our_own_directory_open_to_others_is_refused(
    pair: tuple[User, User], ssh_boxes: Any
) -> None:
    victim, _ = pair
    target = Path(f"/tmp/campaignops-ssh-{victim.uid}")
    target.mkdir()
    os.chown(target, victim.uid, victim.gid)
    target.chmod(0o777)
    _refused(victim, ssh_boxes[0], target, "mode 0777")


def test_a_fresh_directory_is_private_and_shared(pair: tuple[User, User], ssh_boxes: Any) -> None:
    victim, _ = pair
    target = Path(f"/tmp/campaignops-ssh-{victim.uid}")
    answer, argvs = _as_victim(victim, ssh_boxes[0])
    assert answer["stdout"] == "reached\n" and answer["warning"] is None
    assert answer["path"] == str(target)
    st = target.lstat()
    assert (stat.S_ISDIR(st.st_mode), st.st_uid, stat.S_IMODE(st.st_mode)) == (
        True,
        victim.uid,
        0o700,
    )
    assert all(f"ControlPath={target}/%C" in argv for argv in argvs), argvs


def test_xdg_runtime_dir_is_preferred(pair: tuple[User, User], ssh_boxes: Any) -> None:
    victim, _ = pair
    runtime = Path(tempfile.mkdtemp(prefix="xdg", dir="/tmp"))
    os.chown(runtime, victim.uid, victim.gid)
    try:
        answer, argvs = _as_victim(victim, ssh_boxes[0], {"XDG_RUNTIME_DIR": str(runtime)})
        inside = runtime / f"campaignops-ssh-{victim.uid}"
        assert answer["path"] == str(inside) and answer["warning"] is None, answer
        assert all(f"ControlPath={inside}/%C" in argv for argv in argvs), argvs
        assert not Path(f"/tmp/campaignops-ssh-{victim.uid}").exists()
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


# In-process, as whoever runs the tests: the choice of base, without another user.


def test_an_xdg_runtime_dir_others_can_write_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="xdg", dir="/tmp"))
    try:
        runtime.chmod(0o770)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        found = sshlink.control()
        assert found.path is not None and found.path.parent == Path("/tmp"), found
        runtime.chmod(0o700)
        assert sshlink.control().path == runtime / f"campaignops-ssh-{os.getuid()}"
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_hostile_directory_in_the_runtime_dir_turns_sharing_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="xdg", dir="/tmp"))
    try:
        inside = runtime / f"campaignops-ssh-{os.getuid()}"
        inside.mkdir()
        inside.chmod(0o755)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        found = sshlink.control()
        assert found.path is None and found.warning is not None
        assert f"{inside} has mode 0755" in found.warning
        assert sshlink.control_dir() is None
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_runtime_dir_too_long_for_a_socket_falls_back_to_tmp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="xdg", dir="/tmp"))
    deep = runtime / ("d" * 60)
    try:
        deep.mkdir(mode=0o700)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
        found = sshlink.control()
        assert found.path is not None and found.path.parent == Path("/tmp")
        assert len(str(deep / "campaignops-ssh-0")) > sshlink.CONTROL_DIR_MAX
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
