#!/usr/bin/env python3
"""A real single-node Son of Grid Engine cell (sge_qmaster + sge_execd) under one directory.

The test session brings it up as root (tests/conftest.py, fixture ``gridengine_cell``); by hand:
    python dev/gridengine_cell.py install                 # as root: the Debian packages, if missing
    python dev/gridengine_cell.py up --base /tmp/sge      # prints the variables to export
    python dev/gridengine_cell.py status --base /tmp/sge
    python dev/gridengine_cell.py down --base /tmp/sge

The base directory is the cell's SGE_ROOT: configuration, Berkeley DB spool, job spool,
accounting, logs and pid files all live under it, and both ports are picked free at start, so
the cell neither needs nor disturbs /var/lib/gridengine, /etc/default/gridengine, the init.d
scripts or another cell. Debian bookworm's gridengine is 8.1.9 (Son of Grid Engine). Clients
need the four variables of ``Cell.env`` (SGE_ROOT, SGE_CELL, SGE_QMASTER_PORT, SGE_EXECD_PORT).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("gridengine-master", "gridengine-exec", "gridengine-client")
LIB = Path("/usr/lib/gridengine")
SHARE = Path("/usr/share/gridengine")
BINARIES = ("sge_qmaster", "sge_execd", "qsub", "qstat", "qacct", "qconf", "spoolinit")
CELL = "default"
# "Configure SGE automatically?" no: the packages make no cell of their own (no
# /var/lib/gridengine/default, no spool database), so the other two questions are moot.
DEBCONF = (
    "gridengine-common shared/gridengineconfig boolean false\n"
    "gridengine-common shared/gridenginecell string default\n"
    "gridengine-common shared/gridenginemaster string localhost\n"
)
POLICY_RC = Path("/usr/sbin/policy-rc.d")


class CellError(RuntimeError):
    """A step of bring-up failed; the message names it and carries the daemon's own words."""


@dataclass(frozen=True)
class Cell:
    base: Path  # SGE_ROOT
    host: str
    qmaster_port: int
    execd_port: int

    @property
    def env(self) -> dict[str, str]:
        return {
            "SGE_ROOT": str(self.base),
            "SGE_CELL": CELL,
            "SGE_QMASTER_PORT": str(self.qmaster_port),
            "SGE_EXECD_PORT": str(self.execd_port),
        }

    def stop(self) -> None:
        stop(self.base)


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if not (LIB / b).exists()]


def install() -> None:
    """Install the Debian packages when a binary is missing (root only); silent unless failing."""
    if not missing_binaries():
        return
    _run(["debconf-set-selections"], what="debconf-set-selections", stdin=DEBCONF)
    # The postinsts invoke-rc.d exim4 and the (unconfigured) init.d daemons: deny them all.
    ours = not POLICY_RC.exists()
    if ours:
        POLICY_RC.write_text("#!/bin/sh\nexit 101\n")
        POLICY_RC.chmod(0o755)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = ["apt-get", "-q", "-o", "Dpkg::Use-Pty=0"]
    get = [*apt, "install", "-y", "--no-install-recommends", *PACKAGES]
    try:
        if not any(Path("/var/lib/apt/lists").glob("*Packages*")):
            _run([*apt, "update"], env=env, what="apt-get update")
        try:
            _run(get, env=env, what="install")
        except CellError:  # stale lists give 404s on package files: refresh once and retry
            _run([*apt, "update"], env=env, what="apt-get update")
            _run(get, env=env, what="install")
    finally:
        if ours:
            POLICY_RC.unlink(missing_ok=True)
    if missing := missing_binaries():
        raise CellError(f"installed {' '.join(PACKAGES)} but still missing: {missing}")


def start(base: Path, *, timeout: float = 60.0) -> Cell:
    """Make a new cell under ``base``, start qmaster and execd, wait until all.q takes jobs;
    stop both on failure."""
    base = base.resolve()
    if (base / CELL).exists():
        raise CellError(f"{base} already holds a cell: stop it and remove the directory first")
    _check_traversable(base)
    for sub in (f"{CELL}/common", "spool/qmaster/job_scripts", "spool/execd", "spool/db", "tpl"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)  # job users' qsub reads SGE_ROOT too
    arch = _run([str(SHARE / "util" / "arch")], what="arch").strip()
    for sub in ("bin", "utilbin", "lib"):
        (base / sub).mkdir(exist_ok=True)
        (base / sub / arch).symlink_to(LIB)
    (base / "util").symlink_to(SHARE / "util")
    host = _host()
    qport = _free_port()
    eport = _free_port(not_=qport)
    cell = Cell(base=base, host=host, qmaster_port=qport, execd_port=eport)
    env = {**os.environ, **cell.env}
    try:
        _write_common(base, host)
        _init_spool(base)
        _run([str(LIB / "sge_qmaster")], env=env, what="sge_qmaster")
        _wait(lambda: _ok(["qconf", "-sh"], env), 30, "qmaster answering", base)
        _configure(base, host, env)
        _run([str(LIB / "sge_execd")], env=env, what="sge_execd")
        _wait(lambda: _queue_ready(host, env), timeout, f"all.q@{host} ready", base)
    except BaseException:
        stop(base)
        raise
    (base / "env.sh").write_text("".join(f"export {k}={v}\n" for k, v in cell.env.items()))
    return cell


def stop(base: Path) -> None:
    """End the cell's jobs, execd and qmaster; safe to call twice. SIGKILL for the qmaster:
    its controlled shutdown takes ~8 s and a throwaway cell keeps nothing."""
    base = base.resolve()
    if not (base / "spool").is_dir():
        return
    env = {**os.environ, **_read_env(base)}
    qmaster = _pid(base / "spool" / "qmaster" / "qmaster.pid")
    execds = [_pid(p) for p in (base / "spool" / "execd").glob("*/execd.pid")]
    jobs = [_pid(p) for p in (base / "spool" / "execd").glob("*/active_jobs/*/job_pid")]
    if _alive(qmaster) and "SGE_QMASTER_PORT" in env:
        # execd kills its jobs and leaves (0.3 s).
        subprocess.run(["qconf", "-kej", _host()], env=env, capture_output=True, timeout=30)
    for pid in execds:
        _terminate(pid, grace=10)
    for pgid in jobs:  # a job's processes run in the process group of its job_pid
        if _alive(pgid) and pgid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
    _terminate(qmaster, grace=0)


def status(base: Path) -> str:
    base = base.resolve()
    env = {**os.environ, **_read_env(base)}
    pids = {"qmaster": _pid(base / "spool" / "qmaster" / "qmaster.pid")}
    for path in (base / "spool" / "execd").glob("*/execd.pid"):
        pids[f"execd {path.parent.name}"] = _pid(path)
    lines = [f"{n}: {'up' if _alive(p) else 'down'}" for n, p in pids.items()]
    if _alive(pids["qmaster"]):
        lines.append(_run_out(["qstat", "-f"], env))
    return "\n".join(lines)


def _write_common(base: Path, host: str) -> None:
    common = base / CELL / "common"
    # The qmaster compares the name a client gives itself with the name its peer address
    # resolves to: with "127.0.0.1 localhost" first in /etc/hosts the loopback resolves to
    # "localhost", not the host name. host_aliases makes them one host without editing
    # /etc/hosts (read when the daemons start).
    if not _ok([str(LIB / "gethostbyname"), "-name", host], {}):
        raise CellError(
            f"host name {host!r} does not resolve: add '127.0.0.1 {host}' to /etc/hosts"
        )
    names = {_run_out([str(LIB / "gethostbyname"), "-name", host], {}).strip(), "localhost"}
    names |= {socket.getfqdn(host)}
    aliases = sorted(n for n in names if n and n != host)
    (common / "host_aliases").write_text(" ".join([host, *aliases]) + "\n")
    (common / "act_qmaster").write_text(f"{host}\n")
    # admin_user none: the daemons keep root for their files; nothing needs sgeadmin.
    (common / "bootstrap").write_text(
        _conf(
            admin_user="none",
            default_domain="none",
            ignore_fqdn="true",
            spooling_method="berkeleydb",
            spooling_lib="libspoolb",
            spooling_params=base / "spool" / "db",
            binary_path=base / "bin",
            qmaster_spool_dir=base / "spool" / "qmaster",
            security_mode="none",
            listener_threads=2,
            worker_threads=2,
            scheduler_threads=1,
        )
    )


# Debian's global configuration, changed where a test cell must: root (uid 0) may submit,
# no mail, accounting written at once (qacct answers as soon as a job ends, not 15 s later).
GLOBAL_CONF = {
    "min_uid": "0",
    "min_gid": "0",
    "mailer": "/bin/true",
    "load_report_time": "00:00:05",
    "execd_params": "ENABLE_ADDGRP_KILL=TRUE",
    "reporting_params": "accounting=true reporting=false flush_time=00:00:01 joblog=false "
    "sharelog=00:00:00 accounting_flush_time=00:00:00",
}


def _init_spool(base: Path) -> None:
    conf = base / "tpl" / "configuration"
    lines = []
    for line in (SHARE / "default-configuration").read_text().splitlines():
        key = line.split(maxsplit=1)[0] if line.strip() else ""
        if key == "execd_spool_dir":
            line = f"execd_spool_dir {base / 'spool' / 'execd'}"
        elif key in GLOBAL_CONF:
            line = f"{key} {GLOBAL_CONF[key]}"
        lines.append(line)
    conf.write_text("\n".join(lines) + "\n")
    resources = SHARE / "util" / "resources"
    steps = [
        ["spoolinit", "berkeleydb", "libspoolb", str(base / "spool" / "db"), "init"],
        ["spooldefaults", "configuration", str(conf)],
        ["spooldefaults", "complexes", str(resources / "centry")],
        ["spooldefaults", "usersets", str(resources / "usersets")],
        ["spooldefaults", "pes", str(resources / "pe")],
        ["spooldefaults", "managers", "root"],
    ]
    env = {**os.environ, "SGE_ROOT": str(base), "SGE_CELL": CELL}
    for step in steps:
        _run([str(LIB / step[0]), *step[1:]], env=env, what=step[0])


EXECHOST_NONE = ("load_scaling", "complex_values", "user_lists", "xuser_lists", "projects",
                 "xprojects", "usage_scaling", "report_variables")  # fmt: skip
# all.q as Debian's template makes it, but: load_thresholds NONE (a busy test host, load 5 on
# 2 cores, must not put the queue in alarm) and shell_start_mode unix_behavior (a job script
# runs under its #! line, not /bin/sh as posix_compliant does).
QUEUE: dict[str, object] = {
    "seq_no": 0, "load_thresholds": "NONE", "suspend_thresholds": "NONE", "nsuspend": 1,
    "suspend_interval": "00:05:00", "priority": 0, "min_cpu_interval": "00:05:00",
    "processors": "UNDEFINED", "qtype": "BATCH INTERACTIVE", "ckpt_list": "NONE",
    "pe_list": "make smp mpi", "rerun": "FALSE", "slots": 8, "tmpdir": "/tmp",
    "shell": "/bin/sh", "prolog": "NONE", "epilog": "NONE",
    "shell_start_mode": "unix_behavior", "starter_method": "NONE", "suspend_method": "NONE",
    "resume_method": "NONE", "terminate_method": "NONE", "notify": "00:00:60",
    "owner_list": "NONE", "user_lists": "NONE", "xuser_lists": "NONE",
    "subordinate_list": "NONE", "complex_values": "NONE", "projects": "NONE",
    "xprojects": "NONE", "calendar": "NONE", "initial_state": "default",
    **{f"{s}_{r}": "INFINITY" for r in ("rt", "cpu", "fsize", "data", "stack", "core", "rss",
                                         "vmem") for s in "sh"},
}  # fmt: skip


def _configure(base: Path, host: str, env: Mapping[str, str]) -> None:
    tpl = base / "tpl"
    exechost = {"hostname": host, **dict.fromkeys(EXECHOST_NONE, "NONE")}
    (tpl / "exechost").write_text(_conf(**exechost))
    (tpl / "all.q").write_text(_conf(qname="all.q", hostlist=host, **QUEUE))
    sconf = _run_out(["qconf", "-ssconf"], env)
    # The scheduler runs every second (default 15 s) and on every submit and finish.
    changes = {"schedule_interval": "0:0:1", "flush_submit_sec": "1", "flush_finish_sec": "1",
               "job_load_adjustments": "NONE", "load_adjustment_decay_time": "0:0:0"}  # fmt: skip
    out = []
    for line in sconf.splitlines():
        key = line.split(maxsplit=1)[0] if line.strip() else ""
        out.append(f"{key} {changes[key]}" if key in changes else line)
    (tpl / "sconf").write_text("\n".join(out) + "\n")
    for argv in (["-as", host], ["-Ae", str(tpl / "exechost")], ["-Aq", str(tpl / "all.q")],
                 ["-Msconf", str(tpl / "sconf")]):  # fmt: skip
        _run(["qconf", *argv], env=env, what=f"qconf {argv[0]}")


def _queue_ready(host: str, env: Mapping[str, str]) -> bool:
    """all.q@host is listed with no state letters (no a, u, d or E)."""
    for line in _run_out(["qstat", "-f", "-q", "all.q"], env).splitlines():
        words = line.split()
        if words and words[0] == f"all.q@{host}":
            return len(words) == 5
    return False


def _host() -> str:
    return socket.gethostname()


def _read_env(base: Path) -> dict[str, str]:
    out = {"SGE_ROOT": str(base), "SGE_CELL": CELL}
    path = base / "env.sh"
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            out[key] = value
    return out


def _check_traversable(base: Path) -> None:
    for parent in base.parents:
        if parent.stat().st_mode & 0o001 == 0:
            raise CellError(
                f"{parent} is not searchable by others: a job user's qsub could not read "
                f"SGE_ROOT {base}; use a base under /tmp made with mkdtemp"
            )


def _conf(**items: object) -> str:
    return "".join(f"{k} {v}\n" for k, v in items.items())


def _free_port(*, not_: int = 0) -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port != not_:
            return port


def _pid(path: Path) -> int | None:
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
    # The daemons reparent to PID 1, which may not reap: a zombie is not our daemon.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _terminate(pid: int | None, *, grace: float) -> None:
    if pid is None:
        return
    if grace and _wait(lambda: not _alive(pid), grace, "", None):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _alive(pid):
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        _wait(lambda: not _alive(pid), 3, "", None)


def _wait(ready: Callable[[], bool], seconds: float, what: str, base: Path | None) -> bool:
    """Poll ``ready`` every 0.2 s; after ``seconds`` raise (when ``what`` is named) or return."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(0.2)
    if what:
        raise CellError(f"{what}: not after {seconds:.0f} s{_tails(base)}")
    return False


def _tails(base: Path | None) -> str:
    logs = [Path("/tmp/qmaster_messages"), *Path("/tmp").glob("execd_messages.*")]
    if base is not None:
        logs = [base / "spool" / "qmaster" / "messages", *base.glob("spool/execd/*/messages")]
    out = []
    for log in logs:
        if log.exists():
            tail = log.read_text(errors="replace").splitlines()[-8:]
            out.append(f"\n--- {log}\n" + "\n".join(tail))
    return "".join(out)


def _run(
    argv: Sequence[str], *, env: Mapping[str, str] | None = None, what: str, stdin: str = ""
) -> str:
    proc = subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CellError(f"{what}: {' '.join(argv)} exited {proc.returncode}\n{proc.stderr}")
    return proc.stdout


def _run_out(argv: Sequence[str], env: Mapping[str, str]) -> str:
    return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True).stdout


def _ok(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    full = {**os.environ, **env}
    return subprocess.run(argv, env=full, capture_output=True).returncode == 0


def _up(args: argparse.Namespace) -> None:
    install()
    cell = start(args.base)
    print("".join(f"export {k}={v}\n" for k, v in cell.env.items()), end="")


ACTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "install": lambda _: install(),
    "up": _up,
    "down": lambda args: stop(args.base),
    "status": lambda args: print(status(args.base)),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("action", choices=tuple(ACTIONS))
    parser.add_argument("--base", type=Path, help="the cell's directory (not for install)")
    args = parser.parse_args(argv)
    if args.base is None and args.action != "install":
        parser.error(f"{args.action} needs --base DIR")
    try:
        ACTIONS[args.action](args)
    except CellError as exc:
        print(f"gridengine_cell: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
