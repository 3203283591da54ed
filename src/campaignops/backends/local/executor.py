"""The local backend's command line: ``python -m campaignops.backends.local.executor submit|run|status|…``.

Files under the state root (``.campaign/local/``), one directory per job:

- ``.next-id``: the id counter, read and bumped under ``flock``, so concurrent submits differ;
  each id also carries 24 random bits (``local-<n>-<6 hex>``), so two clones of one campaign,
  whose counters both start at 1, never put the same id in the merged ledger;
- ``<id>/script.sh``: the submitted script, copied (later edits to the source change nothing);
- ``<id>/job.json``: name, comment, time limit, submitted time, size, and the box executor's
  keys read from the script's ``#LOCAL`` lines (written once, before the start);
- ``<id>/state.json``: written only by the executor (atomically: tmp, fsync, rename), or by
  ``cancel`` once the executor is gone: the box executor's format (docs/formats.md);
- ``<id>/cancel``: a cancel request, seen by the executor within a tick;
- ``<id>/cancel-tasks``: single array tasks to cancel (``cancel <id>_<index>``), one index a
  line, appended; the executor reads it every tick and stops (or never starts) those tasks;
- ``<id>/executor.pid``: the executor's pid, written by ``submit`` once it has started it;
  ``<id>/executor.lock``: taken by ``submit`` before it writes job.json and handed to the
  executor it starts (``run --lock-fd``), which holds it while it runs: free with no
  state.json, the job has no executor and never will (NODE_FAIL);
- ``<id>/executor.log``: the executor's own output (task output goes to the campaign's logs/).

The executor is the one supervisor (campaignops.remote's ``Executor``, the loop box and local
GPU jobs run under): ``submit`` (campaignops.backends.local.jobfiles) starts it as
``python3 …/remote/boxexec.py run <id dir>`` in a new session (``setsid``), so it is the leader
of its own process group. Its job.json marks the job ``local``: TERM to the executor cancels
the job, the batch shell leads each task's session (no receipt wrapper: a lost executor is
NODE_FAIL, never resumed), and a parent whose executor is gone has ended NODE_FAIL. On Linux the
executor adopts its tasks' orphans (PR_SET_CHILD_SUBREAPER) and reaps them. ``run`` here is
kept for one release: a job submitted before one loop starts its executor with ``python -m
campaignops.backends.local.executor run``, which now runs that same ``Executor`` in-process.
``submit`` and ``cancel`` are in campaignops.backends.local.jobfiles, the readers behind
``status`` and ``siblings`` in campaignops.backends.local.state. The decisions on dependencies,
lost executors, limits and signals are listed in campaignops.backends.local.machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from campaignops.backends.local.directives import EXECUTOR
from campaignops.backends.local.jobfiles import cancel, run, submit
from campaignops.backends.local.state import jobs, view
from campaignops.core.errors import CampaignError
from campaignops.model.states import FINISHED

# --- the command line --------------------------------------------------------------------------


def _cmd_submit(args: argparse.Namespace) -> None:
    print(submit(Path(args.state).absolute(), Path(args.script)))


def _cmd_run(args: argparse.Namespace) -> None:
    run(Path(args.state).absolute(), args.job_id)


def _cmd_status(args: argparse.Namespace) -> None:
    print(json.dumps({"jobs": [view(Path(args.state), j) for j in args.job_ids]}))


def _cmd_siblings(args: argparse.Namespace) -> None:
    root, names = Path(args.state), set(args.names)
    views, broken = jobs(root)
    # No names: every job (the no_sibling gate matches them to targets itself).
    keep = [
        v
        for v in views
        if (not names or v["name"] in names) and (args.all or v["state"] not in FINISHED)
    ]
    print(json.dumps({"jobs": keep, "skipped": broken}))
    for why in broken:
        print(f"localexec siblings: {why}", file=sys.stderr)


def _cmd_cancel(args: argparse.Namespace) -> None:
    for job_id in args.job_ids:
        cancel(Path(args.state), job_id)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], None], tuple[str, ...]]] = {
    "submit": (_cmd_submit, ("script",)),
    "run": (_cmd_run, ("job_id",)),
    "status": (_cmd_status, ("job_ids*",)),
    "siblings": (_cmd_siblings, ("names*",)),
    "cancel": (_cmd_cancel, ("job_ids+",)),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {EXECUTOR}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (_, positionals) in COMMANDS.items():
        sub = commands.add_parser(name)
        sub.add_argument("--state", required=True, help="the state root, .campaign/local")
        if name == "siblings":
            sub.add_argument("--all", action="store_true", help="finished jobs too")
        for spec in positionals:
            sub.add_argument(spec.rstrip("*+"), nargs=spec[-1] if spec[-1] in "*+" else None)
    args = parser.parse_args(argv)
    try:
        COMMANDS[args.command][0](args)
    except CampaignError as exc:
        print(f"localexec {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
