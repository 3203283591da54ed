"""Where an ssh job's share may be reached: the backend page's instance, by name, at every use.

A placement record (the ledger's result record, or this machine's
``.campaign/ssh/<backend>/<id>.json``) says which instance a job's share runs on and where its
directories are. The ledger is merged by union, so a line can come from another clone or a pull
request: a record only *names* the instance. Host, port, identity, known_hosts and workdir are
the committed page's (campaignops.backends.ssh.instances); a record that gives any of them
differently, names an instance the page does not list, or puts the job's directories anywhere
but where sshsubmit puts them under the page's workdir, is refused: nothing connects to it.
``campaign check`` reports the same records (POLICY006), from :func:`differences`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.backends import base as backend_base
from campaignops.backends.ssh.backend import JOB_ID, state_dir
from campaignops.backends.ssh.instances import Instance, of_page
from campaignops.backends.ssh.link import STATE
from campaignops.core import layout
from campaignops.core.errors import CampaignError, InputError
from campaignops.model import backendpage, ledger

CONNECTION = ("host", "port", "identity", "known_hosts", "workdir")
SLUG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*\Z")
COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
EXECUTOR = re.compile(r"boxexec-[0-9a-f]{1,64}\.pyz?\Z")  # .py: one file, before the zip
REFUSED_WHAT = (
    "job {job_id}'s placement on instance {name!r} is not what backend page "
    "backends/{backend}.md gives ({what})"
)
REFUSED = "{where}: " + REFUSED_WHAT + ": nothing connects to it"
REFUSED_HINT = (
    "the page is what is trusted, a ledger line only names the instance: if the page was "
    "changed on purpose after the job was placed, restore that instance's entry until the job "
    "is pulled (or give the moved box a new name); if this line was not written by a submit of "
    "this campaign, remove it in a commit and find where it came from "
    "(git log -p -S {job_id} -- .campaign/ledger.jsonl)"
)


class Refused(CampaignError):
    """A placement that the page does not vouch for (never connected to)."""

    exit_code = 2


@dataclass(frozen=True)
class Reach:
    """One share, reachable: the page's instance and the record's checked directories."""

    instance: Instance
    executor: str
    job_dir: str
    deploy: str
    indices: tuple[int, ...]
    # Each task's declared outputs as recorded at submit; None: a record from before they
    # were recorded (pull then refuses to guess them from the box's list).
    outputs: Mapping[int, tuple[str, ...]] | None


def page_instances(root: Path, backend: str) -> dict[str, Instance]:
    """The page's instances by name; InputError when the page cannot give any (no page, a
    name that cannot be a page's, a page that does not parse or lists no instances)."""
    try:
        return {i.name: i for i in of_page(root, backend, backend_base.page(root, backend))}
    except InputError:
        raise
    except CampaignError as exc:
        raise InputError(path=backendpage.path_of(backend[:80]), message=exc.message) from None


def _same(recorded: object, trusted: object) -> bool:
    # By JSON text: True is not 1, "22" is not 22.
    return json.dumps(recorded) == json.dumps(trusted)


def _outputs(raw: object) -> dict[int, tuple[str, ...]] | None:
    if not isinstance(raw, Mapping):
        raise ValueError
    found: dict[int, tuple[str, ...]] = {}
    for key, paths in raw.items():
        if not (isinstance(key, str) and key.isdigit() and isinstance(paths, list)):
            raise ValueError
        if not all(isinstance(p, str) for p in paths):
            raise ValueError
        found[int(key)] = tuple(paths)
    return found


def _directories(entry: Mapping[str, Any], box: Instance, job_id: str) -> list[str]:
    """What in the record's directories is not where sshsubmit puts them under the page's
    workdir (an exact shape: no '..', no quoting tricks, no other directory)."""
    wrong: list[str] = []
    state = f"{box.workdir.rstrip('/')}/{STATE}"
    if not JOB_ID.fullmatch(job_id) or entry.get("job_dir") != f"{state}/jobs/{job_id}":
        wrong.append(f"job_dir {entry.get('job_dir')!r} is not {state}/jobs/{job_id}")
    executor = entry.get("executor")
    name = executor[len(state) + 1 :] if isinstance(executor, str) else ""
    if not (isinstance(executor, str) and executor.startswith(state + "/")) or not (
        EXECUTOR.fullmatch(name)
    ):
        wrong.append(f"executor {executor!r} is not {state}/boxexec-<hash>.pyz")
    deploy, commit = entry.get("dir"), entry.get("commit")
    base = box.workdir.rstrip("/") + "/"
    slug, _, tail = deploy[len(base) :].partition("/") if isinstance(deploy, str) else ("", "", "")
    if not (
        isinstance(deploy, str)
        and deploy.startswith(base)
        and SLUG.fullmatch(slug)
        and isinstance(commit, str)
        and COMMIT.fullmatch(commit)
        and tail == commit
    ):
        wrong.append(f"dir {deploy!r} is not {base}<campaign>/<commit>")
    return wrong


def differences(entry: object, page: Mapping[str, Instance], job_id: str) -> list[str]:
    """What one placement entry says that the page does not give (empty: it may be reached)."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("instance"), Mapping):
        return ["the entry names no instance"]
    record = entry["instance"]
    name = record.get("name")
    box = page.get(name) if isinstance(name, str) else None
    if box is None:
        return [f"instance {name!r} is not on the page (it lists {', '.join(sorted(page))})"]
    wrong = [
        f"{key} {record.get(key)!r} where the page says {getattr(box, key)!r}"
        for key in CONNECTION
        if not _same(record.get(key), getattr(box, key))
    ]
    wrong += _directories(entry, box, job_id)
    indices = entry.get("indices")
    if not isinstance(indices, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in indices
    ):
        wrong.append(f"indices {indices!r} are not task indices")
    if "outputs" in entry:
        try:
            _outputs(entry["outputs"])
        except ValueError:
            wrong.append("outputs is not {index: [path, …]}")
    return wrong


def resolve(
    entry: object, page: Mapping[str, Instance], *, job_id: str, backend: str, where: str
) -> Reach:
    """The share reachable as the page says, or Refused naming ``where`` and what differs."""
    wrong = differences(entry, page, job_id)
    if wrong or not isinstance(entry, Mapping):
        raw = entry.get("instance") if isinstance(entry, Mapping) else None
        name = raw.get("name") if isinstance(raw, Mapping) else None
        raise Refused(
            message=REFUSED.format(
                where=where, job_id=job_id, name=name, backend=backend, what="; ".join(wrong)
            ),
            hint=REFUSED_HINT.format(job_id=job_id),
        )
    return Reach(
        instance=page[entry["instance"]["name"]],
        executor=str(entry["executor"]),
        job_dir=str(entry["job_dir"]),
        deploy=str(entry["dir"]),
        indices=tuple(entry["indices"]),
        outputs=_outputs(entry["outputs"]) if "outputs" in entry else None,
    )


def refused_page(where: str, job_id: str, backend: str, exc: InputError) -> Refused:
    """A placement whose backend page gives no instances: never connected to either."""
    return Refused(
        message=f"{where}: job {job_id}'s backend page {backendpage.path_of(backend)} gives no "
        f"instance to check its placement against ({exc.message}): nothing connects to it",
        hint=exc.hint or REFUSED_HINT.format(job_id=job_id),
    )


def placement_lines(root: Path) -> dict[str, int]:
    """Each ledger id's last ledger line holding a placement (1-based): where a refusal points."""
    found: dict[str, int] = {}
    for number, rec in records(root):
        found[str(rec["ledger_id"])] = number
    return found


def records(root: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Every readable ledger line that holds a placement list, with its 1-based number."""
    try:
        data = (root / layout.LEDGER_FILE).read_bytes()
    except OSError:
        return
    for number, line in enumerate(ledger.decode(data).splitlines(), start=1):
        if '"placement"' not in line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # AUDIT002's to report
        if (
            isinstance(rec, dict)
            and isinstance(rec.get("ledger_id"), str)
            and isinstance(rec.get("placement"), list)
        ):
            yield number, rec


def where(ledger_id: str, lines: Mapping[str, int]) -> str:
    line = lines.get(ledger_id)
    return f"{layout.LEDGER_FILE}:{line}" if line else f"{layout.LEDGER_FILE} ({ledger_id})"


@dataclass(frozen=True)
class Unvouched:
    """One ledger line's placement entry that the page does not vouch for (campaign check)."""

    line: int
    job_id: str
    backend: str
    name: object
    what: str


def unvouched(root: Path) -> Iterator[Unvouched]:
    """Every placement entry in the ledger that pull, status, cancel and release would refuse:
    each line is judged (a later line of the same job does not hide an earlier one)."""
    placed = list(records(root))
    if not placed:
        return  # no ssh job: the ledger is not folded for nothing
    jobs = {j.ledger_id: j for j in ledger.read(root).jobs}
    pages: dict[str, dict[str, Instance] | InputError] = {}
    for line, rec in placed:
        job = jobs.get(str(rec["ledger_id"]))
        backend = (job.backend if job else None) or "?"
        job_id = rec.get("job_id") if isinstance(rec.get("job_id"), str) else None
        job_id = job_id or (job.job_id if job else None) or "?"
        if backend not in pages:
            try:
                pages[backend] = page_instances(root, backend)
            except InputError as exc:
                pages[backend] = exc
        page = pages[backend]
        for entry in rec["placement"]:
            raw = entry.get("instance") if isinstance(entry, Mapping) else None
            name = raw.get("name") if isinstance(raw, Mapping) else None
            if isinstance(page, InputError):
                what = [f"the page gives no instances: {page.message}"]
            else:
                what = differences(entry, page, job_id)
            if what:
                yield Unvouched(line, job_id, backend, name, "; ".join(what))


def refusals(root: Path, job_ids: Iterable[str]) -> list[str]:
    """One line per unvouched placement entry of ``job_ids`` (what a refresh reports: its
    helper answers UNKNOWN for those tasks, which the ledger keeps as last recorded)."""
    wanted = set(job_ids)
    return [
        f"{layout.LEDGER_FILE}:{u.line}: "
        + REFUSED_WHAT.format(job_id=u.job_id, name=u.name, backend=u.backend, what=u.what)
        + ": never connected to (campaign check: POLICY006)"
        for u in unvouched(root)
        if u.job_id in wanted
    ]


Json = dict[str, Any]


def placement_record(path: Path) -> Json | None:
    """A placement record file's content, or None when it is unreadable or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("placement"), list) else None


def placements(root: Path, backend: str, ids: Iterable[str]) -> dict[str, Json]:
    """Each job's placement record: this checkout's file, else the ledger's result record."""
    state = state_dir(root, backend)
    found: dict[str, Json] = {}
    missing = []
    for job_id in ids:
        if not JOB_ID.fullmatch(job_id):
            continue
        record = placement_record(state / f"{job_id}.json")
        if record is None:
            missing.append(job_id)
        else:
            found[job_id] = record
    if missing:
        for job in ledger.read(root).jobs:
            placed = job.record.get("placement")
            if job.job_id in missing and isinstance(placed, list):
                found[job.job_id] = {
                    "job_id": job.job_id,
                    "name": job.text("name"),
                    "comment": f"{job.ledger_id} {job.text('commit')}",
                    "submitted": job.text("submitted"),
                    "placement": placed,
                }
    return found
