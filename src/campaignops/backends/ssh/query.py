"""``python -m campaignops.backends.ssh.query status|siblings|cancel --root R --backend B …``.

``status ID…`` makes ONE ssh call per instance holding any of the jobs (in parallel): the box
executor's ``status ROOT ID…`` answers for every job there at once. The instances' answers are
merged per job; each task carries its ``instance``. An instance that ssh cannot reach (after
sshlink's bounded retries) gives its tasks state UNKNOWN with the reason: the runner keeps what
the ledger knew, and nothing is declared failed for a dead link. A job still unfinished whose
executor is not alive is started again (``start``: it resumes from its state file, finished
tasks are never run again): one more ssh call for that box, only then, reported as
``restarted``.

A box whose answer says a job there awaits a parent's verdict (afterok across boxes,
campaignops.backends.ssh.afterok) gets it written once the parent's tasks on every box have ended:
one more ssh call for that box, only in that refresh.

``siblings [--all] NAME…`` answers the same for this checkout's jobs of those names (all names:
none given), unfinished ones only unless ``--all``. ``cancel ID|ID_INDEX…`` asks each box's
executor to cancel (one call per job and instance).

Placements come from ``.campaign/ssh/<backend>/<id>.json`` (written by sshsubmit), else from
the ledger's result record (another clone's submission). Either only names the instance: each
share is reached as the backend page says (campaignops.backends.ssh.placement); one the page does not
vouch for is never connected to, and its tasks read UNKNOWN with the reason (``refused``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from campaignops.backends.ssh import afterok as sshafter
from campaignops.backends.ssh import answers as boxanswers
from campaignops.backends.ssh import boxlogs
from campaignops.backends.ssh import link as sshlink
from campaignops.backends.ssh import placement as sshplaced
from campaignops.backends.ssh.answers import BadAnswer
from campaignops.backends.ssh.backend import fold, parse_states, state_dir
from campaignops.backends.ssh.instances import Instance
from campaignops.backends.ssh.placement import placement_record as placement_record
from campaignops.backends.ssh.placement import placements as placements
from campaignops.core.atomic import write_atomic
from campaignops.core.errors import CampaignError, InputError
from campaignops.model import ledger
from campaignops.model.states import FINISHED

Json = dict[str, Any]


@dataclass
class Box:
    """What one ssh call to one instance asks: its executor, and the jobs it holds there."""

    instance: Instance
    executor: str
    jobs: dict[str, Json] = field(default_factory=dict)  # job id → its placement entry


@dataclass(frozen=True)
class Unvouched:
    """A job's share whose placement the page does not vouch for: never connected to."""

    job_id: str
    instance: str
    indices: tuple[int, ...]
    message: str


def _source(root: Path, backend: str, job_id: str, lines: Mapping[str, int], ledger_id: str) -> str:
    own = state_dir(root, backend) / f"{job_id}.json"
    return str(own.relative_to(root)) if own.is_file() else sshplaced.where(ledger_id, lines)


def by_instance(
    root: Path, backend: str, records: Mapping[str, Json]
) -> tuple[dict[str, Box], list[Unvouched]]:
    """The shares grouped per instance, each reached as the backend page says
    (campaignops.backends.ssh.placement), and those the page does not vouch for."""
    boxes: dict[str, Box] = {}
    refused: list[Unvouched] = []
    try:
        page: Mapping[str, Instance] | InputError = sshplaced.page_instances(root, backend)
    except InputError as exc:
        page = exc
    lines = sshplaced.placement_lines(root)
    for job_id, record in records.items():
        ledger_id = str(record.get("comment") or "").partition(" ")[0]
        where = _source(root, backend, job_id, lines, ledger_id)
        for entry in record["placement"]:
            try:
                if isinstance(page, InputError):
                    raise sshplaced.refused_page(where, job_id, backend, page)
                reach = sshplaced.resolve(entry, page, job_id=job_id, backend=backend, where=where)
            except sshplaced.Refused as exc:
                raw = entry.get("instance") if isinstance(entry, Mapping) else None
                indices = entry.get("indices") if isinstance(entry, Mapping) else None
                refused.append(
                    Unvouched(
                        job_id,
                        str(raw.get("name")) if isinstance(raw, Mapping) else "?",
                        tuple(i for i in indices if isinstance(i, int))
                        if isinstance(indices, list)
                        else (),
                        f"{exc.message} (next: {exc.hint})",
                    )
                )
                continue
            box = boxes.setdefault(
                reach.instance.name, Box(instance=reach.instance, executor=reach.executor)
            )
            box.executor = reach.executor  # the newest placed wins: status reads every job's files
            box.jobs[job_id] = dict(entry)
    return boxes, refused


def _ask(box: Box, asked: Mapping[str, Sequence[int]] | None = None) -> Json:
    """The box's answer: the executor's status document, checked (boxanswers), or why there is
    none: the box was not reached, its executor failed, or what it printed is not a status.
    ``asked``: the tasks whose log tail the same call brings (boxlogs), as ``tails``."""
    root = f"{box.instance.workdir}/{sshlink.STATE}/jobs"
    command = shlex.join(["python3", box.executor, "status", root, *sorted(box.jobs)])
    command += boxlogs.command(box.executor, root, asked or {})
    try:
        answer = sshlink.call(box.instance, command)
    except CampaignError as exc:
        return {"reachable": False, "error": exc.message}
    said, tails = boxlogs.split(answer.stdout)
    try:
        if answer.returncode != 0:
            raise BadAnswer(message=f"exit {answer.returncode}: {_last_line(answer)}")
        doc = boxanswers.status_answer(boxanswers.loads(said, "the answer"))
    except BadAnswer as exc:
        name = box.instance.name
        return {"reachable": True, "error": f"instance {name}: unusable answer: {exc.message}"}
    restarted = []
    for job_id, job in doc["jobs"].items():
        if job_id in box.jobs and job["state"] not in FINISHED and not job["executor_alive"]:
            start = shlex.join(["python3", box.executor, "start", f"{root}/{job_id}"])
            try:
                sshlink.checked(sshlink.call(box.instance, start), box.instance, "restart")
                restarted.append(job_id)
            except CampaignError:
                pass  # the next refresh tries again
    try:
        brought = boxanswers.loads(tails, "the log tails") if tails.strip() else None
    except BadAnswer:
        brought = None  # the status stands; the tails are asked again at the next refresh
    return {"reachable": True, "status": doc, "restarted": restarted, "tails": brought}


def _last_line(answer: sshlink.Answer) -> str:
    """What a failed executor said last: one line, never its whole traceback."""
    lines = (answer.stderr or answer.stdout).strip().splitlines()
    return lines[-1][-300:] if lines else "nothing on stderr"


def status(root: Path, backend: str, ids: Sequence[str], *, confirm: bool = False) -> Json:
    """The jobs' tasks on every box; ``confirm`` (a refresh, not a gate's look) also writes
    afterok verdicts on the boxes that await them (_confirm)."""
    base_ids = sorted({i.partition("_")[0] for i in ids})
    records = placements(root, backend, base_ids)
    boxes, refused = by_instance(root, backend, records)
    asked = {name: boxlogs.wanted(root, box.jobs, records) for name, box in boxes.items()}
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(boxes)))) as pool:
        answers = dict(zip(boxes, pool.map(_ask, boxes.values(), asked.values()), strict=True))
    for name, answer in answers.items():
        answer["logs"] = boxlogs.keep(root, answer.pop("tails", None), asked[name], records)
    jobs = []
    for job_id, record in sorted(records.items()):
        tasks: dict[str, Json] = {}
        for name, box in boxes.items():
            entry = box.jobs.get(job_id)
            if entry is None:
                continue
            answer = answers[name]
            seen = (answer.get("status") or {}).get("jobs", {}).get(job_id) or {}
            own: Json = seen["tasks"] if isinstance(seen.get("tasks"), dict) else {}
            for index in entry.get("indices", []):
                task = own.get(str(index))
                if isinstance(task, dict):
                    tasks[str(index)] = {**task, "instance": name}
                else:
                    # Why: no answer, else the executor's own word on the job (a damaged
                    # state.json), else it does not hold the task.
                    said = f"instance {name}: {seen['error']}" if seen.get("error") else None
                    why = answer.get("error") or said or "the executor does not know this task"
                    tasks[str(index)] = {"state": "UNKNOWN", "reason": why, "instance": name}
        for share in (r for r in refused if r.job_id == job_id):
            for index in share.indices:
                why = {"state": "UNKNOWN", "reason": share.message, "instance": share.instance}
                tasks[str(index)] = why
        jobs.append(
            {k: record.get(k) for k in ("job_id", "name", "comment", "submitted")}
            | {"tasks": tasks}
        )
    if confirm:
        _confirm(root, boxes, answers, jobs)
    instances = {
        name: {k: v for k, v in answer.items() if k != "status"}
        | {
            "gpus": (answer.get("status") or {}).get("gpus"),
            "now": (answer.get("status") or {}).get("now"),
        }
        for name, answer in answers.items()
    }
    return {"jobs": jobs, "instances": instances, "refused": [r.message for r in refused]}


def _confirm(
    root: Path, boxes: Mapping[str, Box], answers: dict[str, Json], jobs: Sequence[Json]
) -> None:
    """afterok across boxes (sshafter.plan): one more ssh call per box whose jobs await a parent
    whose end is now known, only then; a failed call is made again at the next refresh (the box
    still awaits). Recorded in the box's answer as ``verdicts`` or ``verdict_error``."""
    awaiting = {
        name: sshafter.awaited(answer.get("status"))
        for name, answer in answers.items()
        if answer.get("reachable")
    }
    folded = {
        str(job["job_id"]): sshafter.verdict(str(t.get("state")) for t in job["tasks"].values())
        for job in jobs
    }
    ended: Mapping[str, str] = {}
    if any(wanted - folded.keys() for wanted in awaiting.values()):
        # Parents no longer refreshed (ended earlier): their end as the ledger recorded it.
        ended = {j.job_id: str(j.state) for j in ledger.read(root).jobs if j.job_id and j.state}
    for name, found in sshafter.plan(awaiting, folded, ended).items():
        box, answer = boxes[name], answers[name]
        root_dir = f"{box.instance.workdir}/{sshlink.STATE}/jobs"
        command = sshafter.verdict_command(box.executor, root_dir, found)
        try:
            sshlink.checked(sshlink.call(box.instance, command), box.instance, "verdict")
            answer["verdicts"] = found
        except CampaignError as exc:
            answer["verdict_error"] = exc.message


def _mark_finished(root: Path, backend: str, doc: Json) -> None:
    """Remember jobs that ended, so the no_sibling query stops asking their boxes."""
    for job in parse_states([json.dumps(doc)]).values():
        state, _ = fold(job.tasks)
        if state in FINISHED:
            path = state_dir(root, backend) / f"{job.job_id}.json"
            record = placement_record(path)
            if record is not None and not record.get("finished"):
                record["finished"] = True
                write_atomic(path, (json.dumps(record, indent=1) + "\n").encode())


def siblings(root: Path, backend: str, names: Sequence[str], *, every: bool) -> Json:
    state = state_dir(root, backend)
    ids = [p.stem for p in state.glob("ssh-*.json")] if state.is_dir() else []
    records = placements(root, backend, ids)
    chosen = [
        k
        for k, v in records.items()
        if (not names or v.get("name") in names) and (every or not v.get("finished"))
    ]
    return status(root, backend, chosen)


def cancel(root: Path, backend: str, ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """Ask each box's executor to cancel; the same call brings each cancelled task's log tail
    (boxlogs: running tasks too, bounded), shown by campaign cancel and never written here
    (the refresh brings the final one home). Returns job id → index → tail."""
    failed = []
    tails: dict[str, dict[str, str]] = {}
    for ref in ids:
        base, _, index = ref.partition("_")
        records = placements(root, backend, [base])
        if base not in records:
            raise CampaignError(message=f"no ssh job {base} in this campaign")
        boxes, refused = by_instance(root, backend, records)
        failed += [r.message for r in refused if not index or int(index) in r.indices]
        for box in boxes.values():
            entry = box.jobs[base]
            if index and int(index) not in entry.get("indices", []):
                continue
            words = ["python3", box.executor, "cancel", str(entry["job_dir"])]
            words += ["--tasks", index] if index else []
            asked = [int(index)] if index else list(entry.get("indices") or [])
            jobs_root = str(PurePosixPath(str(entry["job_dir"])).parent)
            command = shlex.join(words)
            command += boxlogs.command(box.executor, jobs_root, {base: asked}, running=True)
            try:
                stdout = sshlink.checked(
                    sshlink.call(box.instance, command), box.instance, "cancel"
                )
            except CampaignError as exc:
                failed.append(exc.message)
                continue
            said = boxlogs.read(boxlogs.split(stdout)[1], base, asked)
            tails.setdefault(base, {}).update(said)
    if failed:
        raise CampaignError(
            message="; ".join(failed),
            hint="the other instances were cancelled; cancel again once the box answers",
        )
    return tails


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m campaignops.backends.ssh.query")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("status", "siblings", "cancel"):
        one = sub.add_parser(command)
        one.add_argument("--root", required=True, type=Path)
        one.add_argument("--backend", required=True)
        if command == "siblings":
            one.add_argument("--all", action="store_true")
        one.add_argument("ids", nargs="*")
    args = parser.parse_args(argv)
    try:
        if args.command == "status":
            doc = status(args.root, args.backend, args.ids, confirm=True)
            _mark_finished(args.root, args.backend, doc)
            for message in doc["refused"]:
                print(f"warning: {message}", file=sys.stderr)
            print(json.dumps(doc))
        elif args.command == "siblings":
            print(json.dumps(siblings(args.root, args.backend, args.ids, every=args.all)))
        else:
            print(json.dumps({"tails": cancel(args.root, args.backend, args.ids)}))
    except CampaignError as exc:
        print(
            f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
