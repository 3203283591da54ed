"""Local jobs with a GPU list: the box executor (campaignops.remote.boxexec) on this machine.

On the local backend, a job whose manifest lists GPUs (``gpus: [0, 1]``: spec.BoxSettings.gpus),
or one that asks for GPUs (``resources.gpus``, or the manifest's ``gpus: N``) while the local
page's front matter lists ``gpus: [..]``, runs under the same executor as on a rented box, with
no ssh: one task per GPU, a GPU free only below ``gpu_free_threshold_mib`` by nvidia-smi, CUDA
out-of-memory retries by the catalog's matchers (``oom_retry``), conda activation. Every other
local job keeps campaignops.backends.local.executor.

The job directory is the box's (``job.json``, ``script.sh``, ``state.json``, receipts) under
``.campaign/local/box/<id>/`` (gitignored with ``.campaign/local/``); ids are
``local-gpu-<n>-<6 hex>``, a form no localexec id takes, so each id names its executor.
``python -m campaignops.backends.local.gpu``:

- ``submit --state ROOT [--backend PAGE] SCRIPT``: allocates the id, writes the job directory (sshsubmit's
  job.json, with the checkout as work directory), runs the executor's ``start`` (detached,
  ``setsid`` unless ``BOXEXEC_DETACH`` says otherwise) and prints the id;
- ``status --state ROOT ID…``: the executor's ``status`` for those jobs at once, in sshbox's
  shape (``executor: box``); an unfinished job whose executor is gone is started again
  (it resumes from its state file; finished tasks never run twice);
- ``siblings --state ROOT [--all] NAME…`` and ``cancel --state ROOT ID…``: for both kinds of
  local job (localexec's ids are handed to localexec's own code), so the backend keeps one
  call each.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from campaignops.backends import jobids
from campaignops.backends.local import directives as localjob
from campaignops.backends.local import jobfiles as localjobs
from campaignops.backends.local import machine as local
from campaignops.backends.local import state as localstate
from campaignops.backends.ssh import submit as sshsubmit
from campaignops.backends.ssh.instances import Instance
from campaignops.core.atomic import write_atomic
from campaignops.core.errors import CampaignError
from campaignops.model import catalog, manifest_keys
from campaignops.model.jobspec import JobSpec
from campaignops.model.states import FINISHED
from campaignops.remote import commands
from campaignops.remote.records import BoxError, read_json

HELPER = "campaignops.backends.local.gpu"
BOX_DIR = "box"  # under the local state root: .campaign/local/box
ID_PREFIX = "local-gpu-"
BOX = "#LOCALBOX --box="  # the box keys as one JSON object (spec.BoxSettings.record)
AFTER = "#LOCALBOX --after="
EXECUTOR = localjobs.SUPERVISOR  # the box executor's entry module, run by its path
# BoxSettings fields only the box executor runs (manifest_keys.BOX_KEYS): localexec ignores them.
BOX_ONLY = ("conda", "conda_hook", "gpu_free_threshold_mib")


def is_box_id(job_id: str) -> bool:
    base = job_id.partition("_")[0]
    number, _, tail = base.removeprefix(ID_PREFIX).partition("-")
    return (
        base.startswith(ID_PREFIX)
        and number.isdigit()
        and len(tail) == 6
        and all(c in "0123456789abcdef" for c in tail)
    )


def gpu_list(spec: JobSpec, page: Mapping[str, Any] | None) -> tuple[int, ...] | None:
    """The GPUs a local job runs on under the box executor; None: localexec runs it."""
    if spec.box.gpus:
        return spec.box.gpus
    if spec.resources.gpus:
        return manifest_keys.page_gpus(page)
    return None


def render(spec: JobSpec, gpus: Sequence[int]) -> str:
    """The local script, with the box keys and afterok parents in ``#LOCALBOX`` lines (the
    ``#LOCAL`` parser skips them; its own afterok takes only localexec ids)."""
    text = local.render(dataclasses.replace(spec, after=()))
    head, _, rest = text.partition("\n")
    lines = rest.split("\n")
    lines[0:2] = [
        "# Local GPU job, run by the box executor (campaignops.remote.boxexec), which reads the",
        "# #LOCAL lines as sbatch reads #SBATCH. Rendered from a committed manifest: change that.",
    ]
    if spec.after:
        lines.insert(2, AFTER + ",".join(spec.after))
    settings = dataclasses.replace(spec.box, gpus=tuple(gpus)).record()
    lines.insert(2, BOX + json.dumps(settings, sort_keys=True, separators=(",", ":")))
    return "\n".join([head, *lines])


def _line(script: str, prefix: str) -> str | None:
    for line in script.splitlines()[1:]:
        if not line.startswith("#"):
            return None
        if line.startswith(prefix):
            return line[len(prefix) :]
    return None


def is_box_script(script: str) -> bool:
    return _line(script, BOX) is not None


def settings_of(script: str) -> dict[str, Any]:
    raw = _line(script, BOX)
    try:
        found = json.loads(raw) if raw is not None else None
    except ValueError:
        found = None
    if not isinstance(found, dict) or not found.get("gpus"):
        raise localjob.LocalBackendError(
            message=f"the script's {BOX.strip()} line is not a JSON object with gpus",
            hint="render it with campaignops.backends.local.gpu.render",
        )
    return found


def _start(jobdir: Path) -> dict[str, Any]:
    # No ssh session to outlive here: a new session (as localexec's) unless the user asks tmux.
    env = dict(os.environ)
    env.setdefault("BOXEXEC_DETACH", "setsid")
    out = subprocess.run(
        [sys.executable, str(EXECUTOR), "start", str(jobdir)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    try:
        answer = json.loads(out.stdout)
    except ValueError:
        answer = None
    if out.returncode != 0 or not isinstance(answer, dict) or "error" in answer:
        why = answer.get("error") if isinstance(answer, dict) else (out.stdout + out.stderr)
        raise localjob.LocalBackendError(
            message=f"the box executor did not start {jobdir.name}: {str(why).strip()[:300]}",
            hint=f"see {jobdir}/executor.log",
        )
    return answer


def submit(root: Path, script_path: Path, *, backend: str = "local") -> str:
    """Write the job directory under ``root`` (.campaign/local/box) and start its executor."""
    text = script_path.read_text(encoding="utf-8")
    d = localjob.parse_directives(text)
    settings = settings_of(text)
    after = [p for p in (_line(text, AFTER) or "").split(",") if p]
    strangers = [p for p in after if not (is_box_id(p) and (root / p / "job.json").is_file())]
    if strangers:
        raise localjob.LocalBackendError(
            message=f"job {d.name}: afterok parents {', '.join(strangers)} are not local GPU "
            "jobs of this checkout",
            hint="a job under the box executor waits only for local-gpu-… jobs: give the "
            "manifest and its parents the same GPU list",
        )
    checkout = Path(d.workdir)
    patterns = (
        catalog.oom_patterns(catalog.load(checkout), backend=backend, kind="local")
        if settings.get("oom_attempts")
        else ()
    )
    job_id = jobids.allocate(
        root,
        prefix=ID_PREFIX,
        used=lambda: (int(p.name.split("-")[2]) for p in root.iterdir() if is_box_id(p.name)),
        make_dir=True,
    )
    jobdir = root / job_id
    here = Instance(name="local", host="localhost", workdir=str(checkout))
    doc = sshsubmit.job_document(
        d, job_id, range(d.size), here, after, str(checkout), sshsubmit.outputs_of(text),
        settings=settings, oom_patterns=patterns,
    )  # fmt: skip
    # Where the runner's diagnose looks (local.log_path): no index for a job of one task.
    doc["log_name"] = f"{d.name}-{job_id}" + ("_{index}" if d.size > 1 else "") + ".out"
    write_atomic(jobdir / "script.sh", text.encode("utf-8"))
    write_atomic(jobdir / "job.json", (json.dumps(doc, indent=1) + "\n").encode("utf-8"))
    _start(jobdir)
    return job_id


# --- status, siblings, cancel ------------------------------------------------------------------


def status(root: Path, ids: Sequence[str]) -> dict[str, Any]:
    """The executor's answer for the jobs (all of them: no ids), in sshbox's shape."""
    names = sorted({i.partition("_")[0] for i in ids if is_box_id(i)})
    if ids and not names:
        return {"executor": "box", "jobs": []}
    known = [n for n in names if (root / n).is_dir()]
    doc = commands.cmd_status(root, known) if (known or not ids) else {"jobs": {}}
    jobs = []
    for job_id, seen in sorted(doc["jobs"].items()):
        if not is_box_id(job_id):
            continue
        if seen.get("state") not in FINISHED and seen.get("tasks") and not seen["executor_alive"]:
            # It resumes from its state file (a reboot, a kill -9), with this call's
            # environment; one that will not start is tried again at the next refresh.
            with contextlib.suppress(CampaignError):
                _start(root / job_id)
        job = read_json(root / job_id / "job.json") or {}
        text = {k: job.get(k) for k in ("name", "comment", "submitted")}
        jobs.append({"job_id": job_id, **text, "tasks": seen.get("tasks") or {}})
    gone = [n for n in names if n not in known]
    jobs += [{"job_id": n, "tasks": {}} for n in gone]  # UNKNOWN: no such directory here
    return {"executor": "box", "jobs": jobs, "gpus": doc.get("gpus")}


def _finished(tasks: Mapping[str, Any]) -> bool:
    return bool(tasks) and all(t.get("state") in FINISHED for t in tasks.values())


def siblings(state: Path, names: Sequence[str], *, every: bool) -> dict[str, Any]:
    """Both kinds of local job under ``names`` (all: none given), unfinished ones only unless
    ``every``: localexec's records in ``jobs``, the box executor's in ``box``."""
    views, broken = localstate.jobs(state)
    wanted = set(names)
    keep = [
        v
        for v in views
        if (not wanted or v["name"] in wanted) and (every or v["state"] not in FINISHED)
    ]
    box = status(state / BOX_DIR, [])
    chosen = [
        j
        for j in box["jobs"]
        if (not wanted or j.get("name") in wanted) and (every or not _finished(j["tasks"]))
    ]
    return {"jobs": keep, "skipped": broken, "box": {"executor": "box", "jobs": chosen}}


def cancel(state: Path, ids: Sequence[str]) -> None:
    for ref in ids:
        if not is_box_id(ref):
            localjobs.cancel(state, ref)
            continue
        base, _, index = ref.partition("_")
        jobdir = state / BOX_DIR / base
        if not (jobdir / "job.json").is_file():
            raise localjob.LocalBackendError(message=f"no local GPU job {base} under {state}")
        try:
            commands.cmd_cancel(jobdir, index or None)
        except BoxError as exc:
            raise localjob.LocalBackendError(message=exc.message, hint=exc.hint) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {HELPER}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("submit", "status", "siblings", "cancel"):
        one = sub.add_parser(name)
        one.add_argument("--state", required=True, type=Path, help="the local state root")
        if name == "submit":
            one.add_argument("--backend", default="local", help="the page's name")
        if name == "siblings":
            one.add_argument("--all", action="store_true", help="finished jobs too")
        one.add_argument("args", nargs="*")
    args = parser.parse_args(argv)
    state = args.state.absolute()
    try:
        if args.command == "submit":
            print(submit(state / BOX_DIR, Path(args.args[0]), backend=args.backend))
        elif args.command == "status":
            print(json.dumps(status(state / BOX_DIR, args.args)))
        elif args.command == "siblings":
            print(json.dumps(siblings(state, args.args, every=args.all)))
        else:
            cancel(state, args.args)
    except CampaignError as exc:
        print(f"localbox {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
