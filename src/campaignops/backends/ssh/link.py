"""The ssh transport of the ssh backend: one argv builder, bounded retries, and the three writes
a submission makes on a box (the campaign at its commit, the executor, the job directory).

Every call is ``ssh -T`` with the options a flaky rented link needs (research notes:
/work/shared/research/ssh-backend-anchors.md §1-2, verified 2026-11):

- ``BatchMode=yes`` and ``IdentitiesOnly=yes``: never a password prompt, only the key named;
- ``StrictHostKeyChecking=yes`` with the instance's ``known_hosts``: a changed host key (a reused
  port after a re-rent) is refused, not accepted with a warning;
- ``ConnectTimeout`` and ``ServerAliveInterval=5``/``ServerAliveCountMax=3``: a dead link ends
  the command within ~15 s instead of hanging it (the detection time is Interval × CountMax);
- ``ControlMaster=auto`` with ``ControlPersist=60`` and ``ControlPath=<dir>/%C``: later calls
  reuse the connection (3 ms instead of 180 ms here); ``%C`` is a hash of the endpoint, so the
  socket path stays short of the 108-byte limit (Ray's bug #4745). Only in a directory that is
  ours alone (control(): whoever can enter it can answer our calls), else no shared connection.

Exit 255 is ssh's own failure (no route, refused, reset, timed out): retried a bounded number
of times with a doubling pause. Every other exit is the remote command's and is returned.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shlex
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from campaignops.backends.ssh.instances import Instance
from campaignops.core.errors import CampaignError
from campaignops.core.layout import OUT_ROOT as OUT_LINK  # ${CAMPAIGN_OUT} is runs/<stage>
from campaignops.remote import artifact

SSH_FAILED = 255
ATTEMPTS = 3
BASE_DELAY_S = 1.0
CONNECT_TIMEOUT_S = 10
CALL_TIMEOUT_S = 300.0
CONTROL_PERSIST_S = 60
STATE = ".campaignops"  # under the instance's workdir: executors and job directories


class Unreachable(CampaignError):
    """ssh itself failed (exit 255) on every attempt: the box was not reached."""

    exit_code = 2


@dataclass(frozen=True)
class Answer:
    returncode: int
    stdout: str
    stderr: str
    attempts: int


# ssh adds "/<40 hex of %C>.<16 random>" while it binds: the whole must fit sun_path (108).
CONTROL_DIR_MAX = 108 - 1 - 40 - 17
CONTROL_NAME = "campaignops-ssh-{uid}"
# A directory ssh's -o ControlPath takes as it is: no space (ssh splits there), no "%" (a token).
CONTROL_SAFE = re.compile(r"/[A-Za-z0-9._/+-]*")
CONTROL_OFF = (
    "ssh: no shared connection (each ssh call connects on its own, slower): {why}; "
    "remove it (as its owner or root), or set XDG_RUNTIME_DIR to a directory only you can write"
)


@dataclass(frozen=True)
class Control:
    """The shared connections' socket directory, or None and why there is none."""

    path: Path | None
    why: str | None = None

    @property
    def warning(self) -> str | None:
        return None if self.why is None else CONTROL_OFF.format(why=self.why)


def _bases() -> list[Path]:
    """Where the directory may go, best first: $XDG_RUNTIME_DIR (per user, on tmpfs, gone at
    logout) when it is a real directory of ours that nobody else can write; then /tmp."""
    found = []
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        try:
            st = os.lstat(runtime)
        except OSError:
            st = None
        if st is not None and _ours(st, 0o022) is None:
            found.append(Path(runtime))
    found.append(Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir()))
    return found


def _ours(st: os.stat_result, forbidden: int) -> str | None:
    """Why a directory's lstat is not ours alone (None: it is): a link, another owner, or
    mode bits in ``forbidden`` that let others in."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
    if st.st_mode & forbidden:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}: others can reach it"
    return None


def control() -> Control:
    """The shared connections' directory: ``campaignops-ssh-<uid>`` under the first base of
    _bases whose path ssh can take, created 0700 or, when it exists, accepted only as a real
    directory of ours with no group or other bits. Anyone who can replace or enter it can
    move the master socket aside and answer our ssh calls, so otherwise: no shared connection.
    No race: the check is lstat after mkdir, in a base where only we (XDG_RUNTIME_DIR) or
    only the entry's owner (the sticky /tmp) can rename or remove it."""
    why = "no base directory fits ssh's socket path limit"
    for base in _bases():
        path = base / CONTROL_NAME.format(uid=os.getuid())
        if len(str(path)) > CONTROL_DIR_MAX or not CONTROL_SAFE.fullmatch(str(path)):
            continue
        try:
            shared = base.stat()  # a system's /tmp may be a link (macOS): where it leads
        except OSError as exc:
            return Control(None, f"{base}: {exc.strerror}")
        if shared.st_mode & 0o022 and not shared.st_mode & stat.S_ISVTX:
            return Control(None, f"{base} is writable by others without the sticky bit")
        try:
            path.mkdir(mode=0o700)  # umask may take bits away, never add them
        except FileExistsError:
            pass  # judged below as one we just made: by its lstat
        except OSError as exc:
            return Control(None, f"{path} cannot be created: {exc.strerror}")
        try:
            refused = _ours(os.lstat(path), 0o077)
        except OSError as exc:
            refused = f"cannot be read: {exc.strerror}"
        return Control(None, f"{path} {refused}") if refused else Control(path)
    return Control(None, why)


def control_dir() -> Path | None:
    """control()'s directory (None: no shared connection)."""
    return control().path


def ssh_argv(box: Instance, command: str, *, control: Path | None = None) -> list[str]:
    """``ssh -T`` to the box running ``command`` (one remote shell line)."""
    argv = ["ssh", "-T"]
    if box.port is not None:
        argv += ["-p", str(box.port)]
    if box.identity is not None:
        argv += ["-i", str(Path(box.identity).expanduser()), "-o", "IdentitiesOnly=yes"]
    if box.known_hosts is not None:
        argv += ["-o", f"UserKnownHostsFile={Path(box.known_hosts).expanduser()}"]
    argv += [
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=3",
        "-o", "LogLevel=ERROR",
    ]  # fmt: skip
    if control is not None:
        argv += [
            "-o", "ControlMaster=auto",
            "-o", f"ControlPersist={CONTROL_PERSIST_S}",
            "-o", f"ControlPath={control}/%C",
        ]  # fmt: skip
    # "--" ends ssh's options: a host can never be read as one.
    return [*argv, "--", box.host, command]


Run = Callable[..., "subprocess.CompletedProcess[bytes]"]


def call(
    box: Instance,
    command: str,
    *,
    stdin: bytes | None = None,
    attempts: int = ATTEMPTS,
    base_delay: float = BASE_DELAY_S,
    sleep: Callable[[float], None] = time.sleep,
    control: Path | None = None,
    run: Run = subprocess.run,
) -> Answer:
    """Run ``command`` on the box; retry ssh's own failures (exit 255), then raise Unreachable.
    ``control``: the directory of the shared connection's socket (default: control_dir())."""
    control = control if control is not None else control_dir()
    argv = ssh_argv(box, command, control=control)
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            done = run(
                argv,
                input=stdin if stdin is not None else b"",
                capture_output=True,
                timeout=CALL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            last = f"no answer within {CALL_TIMEOUT_S:g} s"
        else:
            out = done.stdout.decode("utf-8", "replace")
            err = done.stderr.decode("utf-8", "replace")
            if done.returncode != SSH_FAILED:
                return Answer(done.returncode, out, err, attempt)
            last = err.strip() or "ssh exit 255"
            refused = _refusal(box, last)
            if refused is not None:  # the same answer every time: no retry
                raise refused
        if attempt < attempts:
            sleep(base_delay * 2 ** (attempt - 1))
    raise Unreachable(
        message=f"instance {box.name} ({box.host}) unreachable after {attempts} attempts: {last}",
        hint="check that the box runs and its port, key and known_hosts on the backend page "
        f"are current: ssh -p {box.port or 22} {box.host} true",
    )


def _refusal(box: Instance, stderr: str) -> Unreachable | None:
    """ssh's answers that a retry cannot change: the host key, the key or user refused."""
    where = f"-p {box.port or 22} {box.host.rpartition('@')[2]}"
    if (
        "host key verification failed" in stderr.lower()
        or "host identification has changed" in stderr.lower()
    ):
        return Unreachable(
            message=f"instance {box.name} ({box.host}): its host key is not the one pinned "
            f"in {box.known_hosts or '~/.ssh/known_hosts'} (or none is pinned): {stderr[-300:]}",
            hint="compare the key's fingerprint with the provider's console, then pin it: "
            f"ssh-keyscan {where} >> KNOWN_HOSTS (a re-rented box on a reused "
            "port has a new key: remove the old line first)",
        )
    if "permission denied" in stderr.lower():
        return Unreachable(
            message=f"instance {box.name} ({box.host}): the box refused the login: {stderr[-300:]}",
            hint="check the user in host and the identity on the backend page (the public key "
            "must be in the box user's ~/.ssh/authorized_keys)",
        )
    return None


def checked(answer: Answer, box: Instance, what: str) -> str:
    """The answer's stdout, or a CampaignError saying what failed on which box."""
    if answer.returncode != 0:
        raise CampaignError(
            message=f"instance {box.name}: {what} failed (exit {answer.returncode}): "
            f"{(answer.stderr or answer.stdout).strip()[-400:]}",
            hint="run the same step by hand over ssh to see why; nothing was started there",
        )
    return answer.stdout


# --- what a submission writes on a box ----------------------------------------------------------


def deploy_dir(box: Instance, slug: str, commit: str) -> str:
    return f"{box.workdir}/{slug}/{commit}"


def data_root(box: Instance, slug: str) -> str:
    """The campaign's durable output root on the box, ``<workdir>/<campaign>/runs``: every
    deployed commit's ``runs`` is a link to it (deploy_command), so a stage's outputs are
    addressed by stage and cell, never by the commit that wrote them (a student submitted
    after a fix commit finds its teacher's checkpoint)."""
    return f"{box.workdir}/{slug}/{OUT_LINK}"


def archive(root: Path, commit: str) -> bytes:
    """The campaign's tree at ``commit`` as a tar (never the working tree)."""
    done = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", commit], capture_output=True
    )
    if done.returncode != 0:
        raise CampaignError(
            message=f"git archive {commit} failed: {done.stderr.decode(errors='replace').strip()}",
            hint="submit from the campaign's git checkout",
        )
    return done.stdout


def deploy_command(target: str) -> str:
    """Unpack stdin's tar into ``target`` once: into a temporary sibling, then one rename, so a
    reader never sees half a tree; an existing target is kept (a commit's tree never changes).
    Its ``runs`` is the relative link ``../runs``, the campaign's durable root (data_root),
    made before the rename (a committed ``runs/`` is merged into the root, never over a file
    there) and, for a tree deployed before there was one, added when nothing is in its way.
    First ``~/.no_auto_tmux``: Vast.ai starts every SSH login inside tmux unless it exists
    (github.com/vast-ai/docs documentation/instances/connect/ssh.mdx, verified 2026-11); an
    empty file in the box user's home, harmless elsewhere."""
    t = shlex.quote(target)
    tmp = shlex.quote(f"{target}.tmp") + ".$$"
    root = shlex.quote(f"{target.rsplit('/', 1)[0]}/{OUT_LINK}")
    link = f"ln -s ../{OUT_LINK}"
    return (
        "touch ~/.no_auto_tmux 2>/dev/null; "
        f"mkdir -p {root} || exit 1; "
        f"if [ -d {t} ]; then cat >/dev/null; "
        f"elif ! {{ mkdir -p {tmp} && tar -x -f - -C {tmp} && "
        f"{{ [ -L {tmp}/{OUT_LINK} ] || [ ! -d {tmp}/{OUT_LINK} ] || "
        f"cp -Rn {tmp}/{OUT_LINK}/. {root}/; }} && rm -rf {tmp}/{OUT_LINK} && "
        f"{link} {tmp}/{OUT_LINK} && mv -T {tmp} {t}; }}; "
        f"then rm -rf {tmp}; [ -d {t} ] || exit 1; fi; "
        f"[ -e {t}/{OUT_LINK} ] || [ -L {t}/{OUT_LINK} ] || {link} {t}/{OUT_LINK}"
    )


def executor_name(source: bytes) -> str:
    """The executor's name on a box, by its content: a new version is a new file, so a running
    executor is never overwritten (an older ``boxexec-<hash>.py``, one file, keeps running)."""
    return f"boxexec-{hashlib.sha256(source).hexdigest()[:12]}.pyz"


def executor_source() -> bytes:
    try:
        return artifact.build()
    except OSError as exc:
        raise CampaignError(
            message=f"the box executor {exc.filename} cannot be read: {exc.strerror}",
            hint="reinstall campaignops (the executor ships with the package)",
        ) from None


def job_tar(files: Mapping[str, bytes]) -> bytes:
    """A tar of ``{relative path: bytes}`` (mode 0644, 0755 for ``.sh``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for rel, data in sorted(files.items()):
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mode = 0o755 if rel.endswith(".sh") else 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def place_and_start_command(box: Instance, executor: str, job_id: str) -> str:
    """One remote line: unpack the executor (never over an existing one: it is named by its
    content) and the job directory (into a hidden sibling, renamed once), then ``start`` it.
    Safe to repeat: an existing job directory is kept and ``start`` is idempotent."""
    state = shlex.quote(f"{box.workdir}/{STATE}")
    tmp = f"jobs/.{job_id}.tmp"
    return (
        f"mkdir -p {state}/jobs && cd {state} && "
        f"tar -x --skip-old-files -f - && "
        f"{{ [ -d jobs/{job_id} ] || mv -T {tmp} jobs/{job_id}; }} && rm -rf {tmp} && "
        f"exec python3 {executor} start {state}/jobs/{job_id}"
    )
