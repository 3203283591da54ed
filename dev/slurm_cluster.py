#!/usr/bin/env python3
"""A real single-node Slurm cluster (munge, MariaDB, slurmdbd, slurmctld, slurmd) under one directory.

The test session brings it up as root (tests/runner/conftest.py); by hand:
    python dev/slurm_cluster.py install                  # as root: the Debian packages, if missing
    python dev/slurm_cluster.py up --base /tmp/slurm      # prints the SLURM_CONF to export
    python dev/slurm_cluster.py status --base /tmp/slurm
    python dev/slurm_cluster.py down --base /tmp/slurm

Everything the daemons write (keys, sockets, database, spool, state, logs, pid files) lives under
the base directory, and every port is picked free at start, so the cluster neither needs nor
disturbs a system Slurm, MariaDB or munged. Debian bookworm's slurm-wlm is 22.05.
"""

from __future__ import annotations

import argparse
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("slurm-wlm", "slurmdbd", "mariadb-server", "munge")
BINARIES = ("sbatch", "slurmctld", "slurmd", "slurmdbd", "munged", "mungekey", "mysqld_safe")
CLUSTER_NAME = "campaignops"
DB_NAME = "slurm_acct_db"
DB_USER = "slurm"
# Daemons in the order stop() ends them: clients of a service go before the service.
PIDFILES = ("slurmd", "slurmctld", "slurmdbd", "mysqld", "munged")
CGROUP_ROOT = Path("/sys/fs/cgroup")


class ClusterError(RuntimeError):
    """A step of bring-up failed; the message names it and carries the daemon's own words."""


@dataclass(frozen=True)
class Cluster:
    base: Path
    name: str
    conf: Path  # slurm.conf: clients need SLURM_CONF pointing here
    # task/cgroup on a cgroup v1 memory controller: a job over its memory shows OUT_OF_MEMORY.
    # Without it (proctrack/linuxproc + OverMemoryKill) the same job shows FAILED, ExitCode 0:9.
    cgroups: bool

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def stop(self) -> None:
        stop(self.base)


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]


def install() -> None:
    """Install the Debian packages when a binary is missing (root only); silent unless failing."""
    if not missing_binaries():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = ["apt-get", "-q", "-o", "Dpkg::Use-Pty=0"]
    # The package lists may be absent on a fresh image (a slim container never ran update).
    if not any(Path("/var/lib/apt/lists").glob("*Packages*")):
        _run([*apt, "update"], env=env, what="apt-get update")
    try:
        _run([*apt, "install", "-y", "--no-install-recommends", *PACKAGES], env=env, what="install")
    except ClusterError:
        # Stale lists give 404s on package files: refresh once and retry.
        _run([*apt, "update"], env=env, what="apt-get update")
        _run([*apt, "install", "-y", "--no-install-recommends", *PACKAGES], env=env, what="install")
    if missing := missing_binaries():
        raise ClusterError(f"installed {' '.join(PACKAGES)} but still missing: {missing}")


def cgroup_v1_available() -> bool:
    """Slurm 22.05's cgroup/v1 needs the memory and freezer controllers mounted and writable.

    cgroup/v2 would need systemd (or IgnoreSystemd, meant for development): not attempted.
    """
    return all(os.access(CGROUP_ROOT / c / "cgroup.procs", os.W_OK) for c in ("memory", "freezer"))


def start(base: Path, *, cgroups: bool | None = None, timeout: float = 60.0) -> Cluster:
    """Bring every daemon up under ``base`` and wait until the node is idle; stop all on failure.

    ``cgroups`` None: use task/cgroup when cgroup v1 allows it, else proctrack/linuxproc.
    """
    if cgroups is None:
        cgroups = cgroup_v1_available()
    base = base.resolve()
    for sub in ("etc", "log", "run", "state", "spool", "munge", "mysql"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    # munged runs as the munge user and must reach its socket and key through base.
    _check_traversable(base)
    base.chmod(0o755)
    conf = base / "etc" / "slurm.conf"
    cluster = Cluster(base=base, name=CLUSTER_NAME, conf=conf, cgroups=cgroups)
    try:
        _start_munge(base)
        password = secrets.token_hex(16)
        _start_mariadb(base, password)
        ports = {name: _free_port() for name in ("ctld", "slurmd", "dbd")}
        _write_configs(base, password, ports, cgroups=cgroups)
        env = _slurm_env(base)
        _run(["slurmdbd"], env=env, what="slurmdbd")
        _wait(lambda: _ok(["sacctmgr", "-n", "-P", "show", "cluster"], env), 30, "slurmdbd", base)
        _run(["sacctmgr", "-i", "add", "cluster", CLUSTER_NAME], env=env, what="sacctmgr")
        _run(["slurmctld", "-f", str(cluster.conf)], env=env, what="slurmctld")
        # slurmd retries registering only every 10 s: start it once the controller answers.
        _wait(lambda: _ok(["scontrol", "ping"], env), 30, "slurmctld", base)
        _run(["slurmd", "-f", str(cluster.conf)], env=env, what="slurmd")
        _wait(lambda: _node_states(env) == {"idle"}, timeout, "node idle", base)
    except BaseException:
        stop(base)
        raise
    return cluster


def stop(base: Path) -> None:
    """Cancel the jobs, then end every daemon started under ``base``; safe to call twice."""
    base = base.resolve()
    conf = base / "etc" / "slurm.conf"
    if _alive(_pid(base, "slurmctld")) and conf.exists():
        # Job steps outlive slurmd: cancel them while the controller can still do it.
        env = _slurm_env(base)
        subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True)
        _wait(lambda: not _run_out(["squeue", "-h", "-o", "%i"], env).strip(), 15, "", None)
    for name in PIDFILES:
        _terminate(_pid(base, name))
    if (base / "etc" / "cgroup.conf").exists():
        _remove_cgroups()


def _remove_cgroups() -> None:
    """slurmd leaves its empty slurm_<host> cgroup directories behind: remove them, deepest first."""
    for controller in ("memory", "freezer"):
        top = CGROUP_ROOT / controller / f"slurm_{_host()}"
        if not top.is_dir():
            continue
        dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for path in [*dirs, top]:
            with contextlib.suppress(OSError):  # still holds a process: not ours to kill
                path.rmdir()


def status(base: Path) -> str:
    env = _slurm_env(base.resolve())
    lines = [f"{n}: {'up' if _alive(_pid(base, n)) else 'down'}" for n in PIDFILES]
    if _alive(_pid(base, "slurmctld")):
        lines.append(_run_out(["sinfo", "-N", "-l"], env))
    return "\n".join(lines)


def _start_munge(base: Path) -> None:
    munge = pwd.getpwnam("munge")
    root = base / "munge"
    key = root / "munge.key"
    if not key.exists():
        _run(["mungekey", "-c", "-k", str(key)], what="mungekey")
    for path in (root, key):
        os.chown(path, munge.pw_uid, munge.pw_gid)
    root.chmod(0o755)  # munged wants its socket directory searchable by every client
    key.chmod(0o600)
    proc = subprocess.run(
        ["munged", *_munge_args(base)],
        user=munge.pw_uid,
        group=munge.pw_gid,
        extra_groups=[],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise ClusterError(f"munged exited {proc.returncode}: {proc.stderr.strip()}")
    sock = str(root / "munge.socket.2")
    check = f"munge -n -S {sock} | unmunge -S {sock} >/dev/null"
    _wait(lambda: _ok(["sh", "-c", check], {}), 15, "munged", base)


def _munge_args(base: Path) -> list[str]:
    root = base / "munge"
    return [
        f"--socket={root / 'munge.socket.2'}",
        f"--key-file={root / 'munge.key'}",
        f"--log-file={root / 'munged.log'}",
        f"--pid-file={root / 'munged.pid'}",
        f"--seed-file={root / 'munged.seed'}",
    ]


def _start_mariadb(base: Path, password: str) -> None:
    data = base / "mysql" / "data"
    sock = base / "mysql" / "mysqld.sock"
    if not data.exists():
        _run(
            ["mysql_install_db", "--no-defaults", f"--datadir={data}", "--user=root"],
            what="mysql_install_db",
        )
    log = (base / "log" / "mysqld_safe.log").open("ab")
    # No TCP listener: slurmdbd reaches the socket through MYSQL_UNIX_PORT (libmariadb reads it).
    subprocess.Popen(
        [
            "mysqld_safe",
            "--no-defaults",
            f"--datadir={data}",
            f"--socket={sock}",
            f"--pid-file={base / 'run' / 'mysqld.pid'}",
            f"--log-error={base / 'log' / 'mysqld.log'}",
            "--skip-networking",
            "--user=root",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    log.close()
    sql = ["mariadb", "--no-defaults", f"--socket={sock}", "-u", "root"]
    _wait(lambda: _ok([*sql, "-e", "SELECT 1"], {}), 30, "mariadb", base)
    statements = (
        f"CREATE DATABASE IF NOT EXISTS {DB_NAME};"
        f"CREATE USER IF NOT EXISTS '{DB_USER}'@'localhost' IDENTIFIED BY '{password}';"
        f"ALTER USER '{DB_USER}'@'localhost' IDENTIFIED BY '{password}';"
        f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'localhost';"
    )
    _run([*sql, "-e", statements], what="create database")


def _host() -> str:
    return socket.gethostname().split(".")[0]


def _write_configs(base: Path, password: str, ports: Mapping[str, int], *, cgroups: bool) -> None:
    host = _host()
    munge = f"socket={base / 'munge' / 'munge.socket.2'}"
    dbd = base / "etc" / "slurmdbd.conf"
    dbd.write_text(
        _conf(
            AuthType="auth/munge",
            AuthInfo=munge,
            DbdHost="localhost",
            DbdPort=ports["dbd"],
            SlurmUser="root",
            LogFile=base / "log" / "slurmdbd.log",
            PidFile=base / "run" / "slurmdbd.pid",
            StorageType="accounting_storage/mysql",
            StorageHost="localhost",
            StorageUser=DB_USER,
            StoragePass=password,
            StorageLoc=DB_NAME,
        )
    )
    dbd.chmod(0o600)  # slurmdbd refuses a config others can read: it holds the password
    if cgroups:
        (base / "etc" / "cgroup.conf").write_text(_conf(**CGROUP_CONF))
    (base / "etc" / "slurm.conf").write_text(
        _conf(
            ClusterName=CLUSTER_NAME,
            SlurmctldHost=f"{host}(127.0.0.1)",
            SlurmctldPort=ports["ctld"],
            SlurmdPort=ports["slurmd"],
            SlurmUser="root",
            AuthType="auth/munge",
            AuthInfo=munge,
            StateSaveLocation=base / "state",
            SlurmdSpoolDir=base / "spool",
            SlurmctldPidFile=base / "run" / "slurmctld.pid",
            SlurmdPidFile=base / "run" / "slurmd.pid",
            SlurmctldLogFile=base / "log" / "slurmctld.log",
            SlurmdLogFile=base / "log" / "slurmd.log",
            **(_CGROUP if cgroups else _LINUXPROC),
            SelectType="select/cons_tres",
            SelectTypeParameters="CR_Core_Memory",
            # Without it every job asks for the whole node's memory and arrays run one at a time.
            DefMemPerCPU=500,
            # Accept the node's declared CPUs (more than the machine has) so that more than two
            # jobs run at once: an array's %C limit is only visible when the node could run more.
            SlurmdParameters="config_overrides",
            MinJobAge=300,
            KillWait=5,  # TIMEOUT jobs end 5 s after the limit, not 30
            InactiveLimit=0,
            ReturnToService=2,
            MpiDefault="none",
            MailProg="/bin/true",  # scripts ask for mail; no MTA here
            AccountingStorageType="accounting_storage/slurmdbd",
            AccountingStorageHost="localhost",
            AccountingStoragePort=ports["dbd"],
            # Clients reach slurmdbd through this munge socket, not AuthInfo's (slurm.conf(5)).
            AccountingStoragePass=base / "munge" / "munge.socket.2",
            AccountingStoreFlags="job_comment",  # sacct shows the comment (ledger id + commit)
            JobAcctGatherType="jobacct_gather/linux",
            JobAcctGatherFrequency="task=1",
            JobCompType="jobcomp/none",
        )
        + f"NodeName={host} NodeAddr=127.0.0.1 CPUs=8 RealMemory=8000 State=UNKNOWN\n"
        + f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP\n"
        + f"PartitionName=short Nodes={host} MaxTime=5 State=UP\n"
    )


# Processes tracked and memory enforced by cgroup v1: the kernel's OOM kill is reported as such.
_CGROUP = {"ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup"}
CGROUP_CONF = {
    "CgroupPlugin": "cgroup/v1",
    "CgroupMountpoint": CGROUP_ROOT,
    "ConstrainRAMSpace": "yes",
    "ConstrainCores": "no",
    "ConstrainDevices": "no",
}
# No usable cgroup tree: track by process tree; the accounting poller kills a step over its
# memory (every JobAcctGatherFrequency seconds), which sacct shows as FAILED with signal 9.
_LINUXPROC = {
    "ProctrackType": "proctrack/linuxproc",
    "TaskPlugin": "task/none",
    "JobAcctGatherParams": "OverMemoryKill",
}


def _conf(**items: object) -> str:
    return "".join(f"{k}={v}\n" for k, v in items.items())


def _slurm_env(base: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SLURM_CONF": str(base / "etc" / "slurm.conf"),
        "MYSQL_UNIX_PORT": str(base / "mysql" / "mysqld.sock"),
    }


def _node_states(env: Mapping[str, str]) -> set[str]:
    # One line per partition the node is in.
    return set(_run_out(["sinfo", "-h", "-N", "-o", "%T"], env).split())


def _check_traversable(base: Path) -> None:
    for parent in base.parents:
        if parent.stat().st_mode & 0o001 == 0:
            raise ClusterError(
                f"{parent} is not searchable by others: munged (user munge) could not reach "
                f"{base}; use a base under /tmp made with mkdtemp"
            )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _pid(base: Path, name: str) -> int | None:
    path = base / ("munge/munged.pid" if name == "munged" else f"run/{name}.pid")
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie or a recycled pid is not our daemon.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[-1].split()[0] != "Z"


def _terminate(pid: int | None) -> None:
    if not _alive(pid):
        return
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    if not _wait(lambda: not _alive(pid), 20, "", None):
        os.kill(pid, signal.SIGKILL)
        _wait(lambda: not _alive(pid), 5, "", None)


def _wait(ready: Callable[[], bool], seconds: float, what: str, base: Path | None) -> bool:
    """Poll ``ready`` every 0.2 s; after ``seconds`` raise (when ``what`` is named) or return."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.2)
    if what:
        logs = "" if base is None else _tails(base)
        raise ClusterError(f"{what}: not ready after {seconds:.0f} s{logs}")
    return False


def _tails(base: Path) -> str:
    out = []
    for log in sorted([*(base / "log").glob("*.log"), base / "munge" / "munged.log"]):
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-8:]
            out.append(f"\n--- {log}\n" + "\n".join(tail))
    return "".join(out)


def _run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, what: str) -> str:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ClusterError(f"{what}: {' '.join(argv)} exited {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def _run_out(argv: Sequence[str], env: Mapping[str, str]) -> str:
    return subprocess.run(argv, env=env, capture_output=True, text=True).stdout


def _ok(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    full = {**os.environ, **env}
    return subprocess.run(argv, env=full, capture_output=True).returncode == 0


def _up(args: argparse.Namespace) -> None:
    install()
    cluster = start(args.base, cgroups=False if args.no_cgroups else None)
    mode = "task/cgroup (v1)" if cluster.cgroups else "proctrack/linuxproc"
    print(f"# {mode}\nexport SLURM_CONF={cluster.conf}")


ACTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "install": lambda _: install(),
    "up": _up,
    "down": lambda args: stop(args.base),
    "status": lambda args: print(status(args.base)),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=tuple(ACTIONS))
    parser.add_argument("--base", type=Path, help="the cluster's directory (not for install)")
    parser.add_argument("--no-cgroups", action="store_true", help="proctrack/linuxproc only")
    args = parser.parse_args(argv)
    if args.base is None and args.action != "install":
        parser.error(f"{args.action} needs --base DIR")
    try:
        ACTIONS[args.action](args)
    except ClusterError as exc:
        print(f"slurm_cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
