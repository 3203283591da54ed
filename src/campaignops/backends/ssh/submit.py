"""``python -m campaignops.backends.ssh.submit submit --root R --backend B SCRIPT``: one ssh job.

Reads the page's instances (campaignops.backends.ssh.instances) and the script's ``#LOCAL`` lines,
allocates an id (``ssh-<n>-<6 hex>`` under ``flock`` in ``.campaign/ssh/<backend>/.next-id``),
deals the array's indices round-robin across the instances, then, per instance that has some:

1. deploys the campaign's tree at the submitted commit (the comment's second word) to
   ``<workdir>/<campaign>/<commit>/`` with ``git archive <commit> | ssh tar``, once;
2. in ONE more ssh call, places the executor (``<workdir>/.campaignops/boxexec-<hash>.pyz``,
   never overwritten), the job directory (``script.sh`` with the deploy directory filled in,
   ``job.json``) and runs the executor's ``start`` (detached; idempotent).

Each afterok parent's ``after`` entry says, per instance, whether the parent has a share there
and tasks elsewhere (campaignops.backends.ssh.afterok), from the parent's placement.

Every deploy happens before any start, so a box that cannot be reached stops the submission
with nothing started. It writes the placement to ``.campaign/ssh/<backend>/<id>.json`` (what
``sshquery`` reads) and prints ``{"job_id", "placement"}`` for the ledger.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from campaignops.backends import base as backend_base
from campaignops.backends import jobids
from campaignops.backends.local import directives as localjob
from campaignops.backends.ssh import afterok as sshafter
from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import placement as sshplaced
from campaignops.backends.ssh import selfstop
from campaignops.backends.ssh.backend import (
    DEPLOY_MARK,
    JOB_ID,
    SshBackendError,
    after_of,
    box_of,
    state_dir,
)
from campaignops.backends.ssh.instances import Instance, of_page
from campaignops.core.atomic import write_atomic
from campaignops.core.errors import CampaignError
from campaignops.model import backendpage, catalog, splitting
from campaignops.model.jobspec import TASK_INDEX
from campaignops.model.taskfiles import ENV_REF

GPU_FREE_THRESHOLD_MIB = 500


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def named_instance(
    instances: Sequence[Instance], alias: object, backend: str
) -> tuple[Instance, ...]:
    """The instances a job runs on: all, or the one the manifest's ``ssh:`` names (by name,
    else by host). The MAN checks refuse an alias no instance answers to; this is the last door."""
    if not isinstance(alias, str):
        return tuple(instances)
    found = [i for i in instances if i.name == alias] or [i for i in instances if i.host == alias]
    if not found:
        raise SshBackendError(
            message=f"ssh: {alias!r} is no instance of {backendpage.path_of(backend)}",
            hint="name one of its instances in ssh:, or add the box to its instances",
        )
    return (found[0],)


def deal(
    size: int, instances: Sequence[Instance], costs: Sequence[float] | None = None
) -> dict[str, list[int]]:
    """Indices 0…size-1 across the instances so that they finish together: by ``costs`` (one
    per index: campaignops.model.splitting, the split `campaign split` makes), longest first on each
    box; without costs, or fewer tasks than boxes, round-robin (instance k runs k, k+K…)."""
    k = len(instances)
    if costs is not None and len(costs) == size and size >= k > 1:
        queues = splitting.split(list(costs), k).queues
        return {
            box.name: sorted(queue, key=lambda i: (-costs[i], i))
            for box, queue in zip(instances, queues, strict=True)
            if queue
        }
    shares: dict[str, list[int]] = {i.name: [] for i in instances}
    for index in range(size):
        shares[instances[index % k].name].append(index)
    return {name: got for name, got in shares.items() if got}


def job_document(
    d: localjob.Directives,
    job_id: str,
    indices: Sequence[int],
    box: Instance,
    after: Sequence[str | Mapping[str, Any]],
    deploy: str,
    outputs: Mapping[str, list[str]] | None = None,
    settings: Mapping[str, Any] | None = None,
    oom_patterns: Sequence[str] = (),
    idle_stop: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The job.json the executor reads (the box interface, docs/runner.md "SSH boxes");
    ``workdir``: the deploy directory, where tasks start and logs go; ``settings``: the
    manifest's box keys (sshbox.box_of): its GPU list (else the instance's), its free
    threshold, conda, and oom_retry with the catalog's GPU out-of-memory matchers;
    ``idle_stop``: when and how the box stops itself once idle (backends.ssh.selfstop)."""
    warning = None if d.warning is None else {"signal": d.warning[0], "seconds": d.warning[1]}
    outputs = outputs or {}
    own = settings or {}
    gpus = own.get("gpus") or (None if box.gpus is None else list(box.gpus))
    retry = None
    if own.get("oom_attempts") and oom_patterns:
        retry = {
            "max_attempts": own["oom_attempts"],
            "delay_s": own.get("oom_delay_s") or 0,
            "patterns": list(oom_patterns),
        }
    conda = {"hook": own.get("conda_hook"), "env": own["conda"]} if own.get("conda") else None
    return {
        "job_id": job_id,
        "workdir": deploy,
        "name": d.name,
        "comment": d.comment,
        "indices": list(indices),
        "max_parallel": d.cap,
        "time_limit_s": d.time_s,
        "kill_wait_s": d.kill_wait_s,
        "warning": warning,
        "after": list(after),
        "gpus": gpus,
        "gpu_free_threshold_mib": own.get("gpu_free_threshold_mib") or GPU_FREE_THRESHOLD_MIB,
        "oom_retry": retry,
        "conda": conda,
        "log_dir": d.log_dir,
        "log_name": f"{d.name}-{job_id}_{{index}}.out",
        "outputs": {i: paths for i, paths in outputs.items() if int(i) in indices},
        "idle_stop": None if idle_stop is None else dict(idle_stop),
        "submitted": now(),
    }


_CASE = re.compile(r"  ([0-9]+)\)\Z")
_OUTPUT = "    campaign_output="


def outputs_of(script: str) -> dict[str, list[str]]:
    """Each task's declared output as the script checks it, relative to the deploy directory,
    for the executor's ``outputs`` (what ``campaign pull`` verifies): ``${NAME}`` expanded from
    the script's own exports and the task's index. An output naming any other variable is left
    out (its value is only known on the box)."""
    env: dict[str, str] = {}
    found: dict[str, list[str]] = {}
    index: str | None = None
    for line in script.splitlines():
        if line.startswith("export ") and "=" in line:
            key, _, value = shlex.split(line[len("export ") :])[0].partition("=")
            env[key] = value
        elif match := _CASE.match(line):
            index = match[1]
        elif index is not None and line.startswith(_OUTPUT):
            word = shlex.split(line[len(_OUTPUT) :])[0]
            known = env | {TASK_INDEX: index}
            parts = ENV_REF.split(word)  # text, name, text, name, …, text
            names = parts[1::2]
            if all(n in known for n in names):
                found[index] = ["".join(known[p] if i % 2 else p for i, p in enumerate(parts))]
    return found


def instance_script(script: str, deploy: str) -> str:
    """The job's script for one instance: its deploy directory where the placeholder was."""
    return script.replace(DEPLOY_MARK, shlex.quote(deploy))


def _start_answer(stdout: str, box: Instance) -> dict[str, Any]:
    """The executor's ``start`` answer, only as the ledger records it: a pid and how it was
    started (a box's answer: anything else is refused, never recorded)."""
    try:
        answer = json.loads(stdout)
    except (ValueError, RecursionError):
        answer = None
    if not isinstance(answer, dict) or "pid" not in answer:
        answer = {"pid": "none given"}
    pid, via = answer.get("pid"), answer.get("via")
    # None: an executor already held the job and has gone since (start said so).
    good_pid = pid is None or (type(pid) is int and 0 < pid < 2**31)
    if not good_pid or not (via is None or (isinstance(via, str) and len(via) <= 40)):
        raise SshBackendError(
            message=f"instance {box.name}: the executor's start printed {stdout[:200]!r}",
            hint="run it by hand on the box to see why (python3 must be 3.8 or newer)",
        )
    return {"pid": pid, "via": via}


def _unwound(exc: CampaignError, placed: Sequence[Mapping[str, Any]]) -> CampaignError:
    """A start failed after others succeeded: cancel those (best effort), so that a refused
    submission leaves nothing running unrecorded; the error says what became of each."""
    notes = []
    for entry in placed:
        box = Instance.from_record(entry["instance"])
        words = ["python3", str(entry["executor"]), "cancel", str(entry["job_dir"])]
        try:
            sshlink.checked(sshlink.call(box, shlex.join(words)), box, "cancel")
            notes.append(f"{box.name}: started, then cancelled")
        except CampaignError:
            notes.append(
                f"{box.name}: started and NOT cancelled: cancel it by hand ({entry['job_dir']})"
            )
    if not notes:
        return exc
    return CampaignError(message=f"{exc.message} ({'; '.join(notes)})", hint=exc.hint)


def _parents(root: Path, backend: str, after: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The afterok parents' placement records: where each runs decides, per box, whether the
    executor may judge it alone (campaignops.backends.ssh.afterok)."""
    if not after:
        return {}
    return sshplaced.placements(root, backend, after)


@dataclass(frozen=True)
class _Start:
    """What every box's start of one job shares."""

    directives: localjob.Directives
    job_id: str
    commit: str
    campaign: str
    script: str
    executor: str
    source: bytes
    declared: Mapping[str, Any]
    settings: Mapping[str, Any]
    patterns: tuple[str, ...]
    idle_stop: Mapping[str, Any] | None


def _oom_patterns(
    root: Path, backend: str, page: Any, settings: Mapping[str, Any]
) -> tuple[str, ...]:
    if not settings.get("oom_attempts"):
        return ()
    kind = str((page or {}).get("kind") or "ssh")
    return catalog.oom_patterns(catalog.load(root), backend=backend, kind=kind)


def _deploy_all(root: Path, boxes: Sequence[Instance], campaign: str, commit: str) -> None:
    """Every deploy first: an unreachable box stops us before any start."""
    tree = sshlink.archive(root, commit)
    for box in boxes:
        target = sshlink.deploy_dir(box, campaign, commit)
        answer = sshlink.call(box, sshlink.deploy_command(target), stdin=tree)
        sshlink.checked(answer, box, f"deploying {commit[:12]} to {target}")


def _new_job_id(state: Path) -> str:
    return jobids.allocate(
        state,
        prefix="ssh-",
        used=lambda: (
            int(m[1]) for p in state.glob("ssh-*.json") if (m := JOB_ID.fullmatch(p.stem))
        ),
        make_dir=False,
    )


def _start_on(
    box: Instance, start: _Start, indices: list[int], needs: Sequence[Any]
) -> dict[str, Any]:
    """Place the job's files on one box, start its executor there: the placement record."""
    deploy = sshlink.deploy_dir(box, start.campaign, start.commit)
    doc = job_document(
        start.directives,
        start.job_id,
        indices,
        box,
        needs,
        deploy,
        start.declared,
        settings=start.settings,
        oom_patterns=start.patterns,
        idle_stop=start.idle_stop,
    )
    job_id = start.job_id
    files: Mapping[str, bytes] = {
        start.executor: start.source,
        f"jobs/.{job_id}.tmp/script.sh": instance_script(start.script, deploy).encode("utf-8"),
        f"jobs/.{job_id}.tmp/job.json": (json.dumps(doc, indent=1) + "\n").encode("utf-8"),
    }
    command = sshlink.place_and_start_command(box, start.executor, job_id)
    answer = sshlink.call(box, command, stdin=sshlink.job_tar(files))
    started = _start_answer(sshlink.checked(answer, box, f"starting {job_id}"), box)
    return {
        "instance": box.record(),
        "commit": start.commit,
        "dir": deploy,
        "job_dir": f"{box.workdir}/{sshlink.STATE}/jobs/{job_id}",
        "executor": f"{box.workdir}/{sshlink.STATE}/{start.executor}",
        "indices": indices,
        # What campaign pull may bring home for each task: the box's own list is
        # never trusted for it (docs/robustness.md, Trust boundaries).
        "outputs": {i: p for i, p in start.declared.items() if int(i) in indices},
        "pid": started.get("pid"),
        "via": started.get("via"),
    }


def submit(root: Path, backend: str, script_path: Path) -> dict[str, Any]:
    script = script_path.read_text(encoding="utf-8")
    d = localjob.parse_directives(script)
    after = after_of(script)
    words = d.comment.split()
    if len(words) != 2:
        raise SshBackendError(message=f"job {d.name}: comment {d.comment!r} is not 'LEDGER COMMIT'")
    commit = words[1]
    campaign = d.name.split(".", 1)[0]
    page = backend_base.page(root, backend)  # read once: instances, then OOM patterns
    settings = box_of(script)
    instances = named_instance(of_page(root, backend, page), settings.get("instance"), backend)
    parents = _parents(root, backend, after)
    raw_costs = settings.get("costs")
    costs = [float(c) for c in raw_costs] if isinstance(raw_costs, list) else None
    shares = deal(d.size, instances, costs)
    boxes = [i for i in instances if i.name in shares]
    source = sshlink.executor_source()
    patterns = _oom_patterns(root, backend, page, settings)
    _deploy_all(root, boxes, campaign, commit)
    state = state_dir(root, backend)
    start = _Start(
        directives=d,
        job_id=_new_job_id(state),
        commit=commit,
        campaign=campaign,
        script=script,
        executor=sshlink.executor_name(source),
        source=source,
        declared=outputs_of(script),
        settings=settings,
        patterns=patterns,
        idle_stop=selfstop.job_setting(root, page),
    )
    placed: list[dict[str, Any]] = []
    for box in boxes:
        needs = sshafter.requirements(after, parents, box.name)
        try:
            placed.append(_start_on(box, start, shares[box.name], needs))
        except CampaignError as exc:
            raise _unwound(exc, placed) from None
    record = {
        "job_id": start.job_id,
        "workdir": sshlink.deploy_dir(boxes[-1], campaign, commit) if boxes else "",
        "name": d.name,
        "comment": d.comment,
        "submitted": now(),
        "size": d.size,
        "placement": placed,
    }
    write_atomic(state / f"{start.job_id}.json", (json.dumps(record, indent=1) + "\n").encode())
    return {"job_id": start.job_id, "placement": placed}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m " + __spec__.name if __spec__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("submit", help="deploy, place and start one job on the page's instances")
    one.add_argument("--root", required=True, type=Path)
    one.add_argument("--backend", required=True)
    one.add_argument("script", type=Path)
    args = parser.parse_args(argv)
    try:
        print(json.dumps(submit(args.root, args.backend, args.script)))
    except CampaignError as exc:
        print(
            f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr
        )
        return exc.exit_code if exc.exit_code != 1 else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
