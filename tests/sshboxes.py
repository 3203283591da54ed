"""Two real sshd on 127.0.0.1 standing in for two rented GPU boxes (the ``ssh_boxes`` fixture).

Each box is its own sshd (own host key, free port, pid file) letting in one non-root user of its
own (``useradd -m``; ``usermod -p '*'``, since with ``UsePAM no`` a ``!`` password locks key
logins) with key authentication only. The client side is pinned: a known_hosts file holding the
box's host key under ``[127.0.0.1]:PORT`` and ``StrictHostKeyChecking=yes``. ``SetEnv PATH=``
puts the box's ``fakebin`` first, where the ``nvidia-smi`` stand-in (a replay of recorded real
query output, tests/fakes/nvidia_smi_replay.py) lives: non-interactive sessions read no
``.bashrc``, and sshd's SetEnv is what reaches them.

Recipe and pitfalls: /work/shared/research/ssh-backend-anchors.md §1 (Debian 12, OpenSSH 9.2).
Homes live under /home, not pytest's tmp dir: StrictModes refuses an ``authorized_keys`` below a
world-writable /tmp. Teardown stops each sshd by its pid, ends the processes the box user still
has (the executors and tasks the tests started, by pid), then ``userdel -r``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
SFTP = "/usr/lib/openssh/sftp-server"
PACKAGES = ("openssh-server", "openssh-client", "rsync", "tmux")
REPLAY = Path(__file__).parent / "fakes" / "nvidia_smi_replay.py"
RECORDINGS = Path(__file__).parent / "data" / "nvidia-smi"
# What each box's nvidia-smi replays: box1 four idle P100s, box2 one idle V100 (recorded).
GPUS = {"box1": "p100x4-idle.csv", "box2": "v100-idle.csv"}


class BoxError(Exception):
    """A box that could not be set up (the fixture skips, or fails under CI=true)."""


def missing() -> list[str]:
    return [
        p for p in (SSHD, "/usr/bin/ssh", "/usr/bin/rsync", "/usr/bin/tmux") if not Path(p).exists()
    ]


def install() -> None:
    """apt-get install the packages when a binary is missing (root only)."""
    if not missing():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = ["apt-get", "-q", "-o", "Dpkg::Use-Pty=0"]
    if not any(Path("/var/lib/apt/lists").glob("*Packages*")):
        subprocess.run([*apt, "update"], env=env, check=True, capture_output=True)
    done = subprocess.run(
        [*apt, "install", "-y", "--no-install-recommends", *PACKAGES], env=env, capture_output=True
    )
    if done.returncode != 0 or missing():
        raise BoxError(f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr[-400:]!r}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(*argv: str) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True)
    if done.returncode != 0:
        raise BoxError(f"{' '.join(argv)}: {done.stderr.strip()}")


@dataclass
class Box:
    """One box: its user, its sshd, and the client files that reach it."""

    name: str
    user: str
    port: int
    home: Path
    conf: Path
    identity: Path
    known_hosts: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return f"{self.user}@127.0.0.1"

    @property
    def workdir(self) -> Path:
        return self.home / "work"

    @property
    def fakebin(self) -> Path:
        return self.home / "fakebin"

    def instance(self, **extra: object) -> dict[str, object]:
        """The box as a backend page's ``instances`` entry."""
        return {
            "name": self.name,
            "host": self.host,
            "port": self.port,
            "identity": str(self.identity),
            "known_hosts": str(self.known_hosts),
            "workdir": str(self.workdir),
            **extra,
        }

    def ssh(self, command: str, *, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """A command on the box, as its user (the test's own look at the box)."""
        argv = [
            "ssh", "-T", "-p", str(self.port), "-i", str(self.identity),
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={self.known_hosts}", "-o", "ConnectTimeout=5",
            "-o", "LogLevel=ERROR", self.host, command,
        ]  # fmt: skip
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def start(self, timeout: float = 15.0) -> None:
        """Start sshd (again) and wait for its banner."""
        if self.proc is not None and self.proc.poll() is None:
            return
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=(self.conf.parent / "sshd.log").open("ab"),
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(8).startswith(b"SSH-2.0"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.conf.parent / "sshd.log").read_text(errors="replace")[-600:]
                raise BoxError(f"sshd for {self.name} did not come up: {log}")
            time.sleep(0.05)

    def sessions(self) -> list[int]:
        """The pids of this sshd's connections (its descendants): what a dropped link ends."""
        if self.proc is None:
            return []
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        found, frontier = [], [self.proc.pid]
        while frontier:
            children = [pid for pid, ppid in parents.items() if ppid in frontier]
            found += children
            frontier = children
        return found

    def drop(self) -> None:
        """Cut every open connection to the box (SIGKILL its sshd session processes): what a
        flaky link does. Detached work on the box goes on."""
        for pid in self.sessions():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop this box's sshd (by its pid) and cut its open connections: the box becomes
        unreachable, its work goes on."""
        self.drop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None

    def processes(self) -> list[int]:
        """The pids of every process the box user runs (what the tests started there)."""
        uid = pwd.getpwnam(self.user).pw_uid
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if entry.stat().st_uid == uid:
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return pids


def make_box(name: str, base: Path) -> Box:
    """Create the user, keys and config of one box and start its sshd (on failure: the user
    deleted again)."""
    user = f"cbox{secrets.token_hex(3)}{name[-1]}"
    _run("useradd", "-m", "-s", "/bin/bash", user)
    try:
        return _setup(name, user, base)
    except BaseException:
        subprocess.run(["userdel", "-r", user], capture_output=True)
        raise


def _setup(name: str, user: str, base: Path) -> Box:
    _run("usermod", "-p", "*", user)
    home = Path(pwd.getpwnam(user).pw_dir)
    own = base / name
    own.mkdir(parents=True)
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(own / "host"))
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(own / "client"))
    entry = pwd.getpwnam(user)
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700)
    (ssh_dir / "authorized_keys").write_text((own / "client.pub").read_text())
    (ssh_dir / "authorized_keys").chmod(0o600)
    fakebin = home / "fakebin"
    fakebin.mkdir()
    if REPLAY.is_file():
        shutil.copy(REPLAY, fakebin / "nvidia-smi")
        (fakebin / "nvidia-smi").chmod(0o755)
        shutil.copy(RECORDINGS / GPUS.get(name, "v100-idle.csv"), fakebin / "nvsmi.csv")
        (fakebin / "nvsmi.csv").chmod(0o644)
    (home / "work").mkdir()
    for path in (ssh_dir, ssh_dir / "authorized_keys", fakebin, home / "work", *fakebin.iterdir()):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    port = _free_port()
    host_key = (own / "host.pub").read_text().split()
    (own / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    conf = own / "sshd_config"
    conf.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {own / 'host'}",
                f"PidFile {own / 'sshd.pid'}",
                "AuthorizedKeysFile .ssh/authorized_keys",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes yes",
                "PermitRootLogin no",
                f"AllowUsers {user}",
                f"Subsystem sftp {SFTP}",
                f"SetEnv PATH={fakebin}:/usr/local/bin:/usr/bin:/bin "
                f"NVSMI_REPLAY={fakebin}/nvsmi.csv NVSMI_REPLAY_STATE={fakebin}/nvsmi-state.json "
                # The executor's own pace, quicker than on a real box (it reads these knobs).
                "BOXEXEC_TICK_S=0.2 BOXEXEC_GPU_POLL_S=1",
                "",
            ]
        )
    )
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    _run(SSHD, "-t", "-f", str(conf))
    box = Box(
        name=name,
        user=user,
        port=port,
        home=home,
        conf=conf,
        identity=own / "client",
        known_hosts=own / "known_hosts",
    )
    box.start()
    return box


def remove_box(box: Box) -> None:
    """Stop sshd, end what the user still runs (by pid), delete the user and home."""
    box.stop()
    for _ in range(3):
        pids = box.processes()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    subprocess.run(["userdel", "-r", box.user], capture_output=True)


def main() -> None:
    """By hand: ``python tests/sshboxes.py`` starts one box, prints how to reach it, waits."""
    base = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/sshbox-manual")
    box = make_box("box1", base)
    print(f"ssh -p {box.port} -i {box.identity} -o UserKnownHostsFile={box.known_hosts} {box.host}")
    try:
        input("enter to stop> ")
    finally:
        remove_box(box)


if __name__ == "__main__":
    main()
