"""The part of every rendered job script that runs the task, shared by all backends.

The task for ``$CAMPAIGN_TASK_INDEX`` is started in the background of the batch shell, which
then waits for it. Signals the batch shell receives — the warning before the time limit
(Slurm's ``--signal=B:USR1@N``, PBS's timer, the local executor) and TERM — are passed to the
task's main process (the program, or the wrapper, which passes them on), not to every process of
the job: a task that traps USR1 checkpoints and exits on its own terms (the wrappers exit 99), and
its helpers (data loaders, `sleep`) are not killed by a warning they never asked for. The
script's exit status is the task's.
"""

from __future__ import annotations

from collections.abc import Sequence

from campaignops.runner.spec import TASK_INDEX

WARNING_SIGNAL = "USR1"
# Exit codes the rendered script itself gives a task, and the reason the ledger records.
REASONS = {96: "precondition", 97: "output-missing"}


def task_function(tasks: Sequence[str]) -> list[str]:
    """Start the index's command in the background; ``$!`` is then the task's own process.

    ``( command` newline `) &``: bash runs a lone simple command in such a subshell by exec, so
    the process the signals go to is the program itself; the closing parenthesis on a line of
    its own keeps a trailing comment in the command from swallowing it.
    """
    lines = [f'case "${TASK_INDEX}" in']
    for index, command in enumerate(tasks):
        lines += [f"  {index})", f"    ( {command}", "    ) &", "    ;;"]
    lines += [
        "  *)",
        f'    echo "campaign: this job has no task ${TASK_INDEX}" >&2',
        "    exit 64",
        "    ;;",
        "esac",
    ]
    return lines


def body(tasks: Sequence[str], *, warned: bool, on_warned_failure: str | None = None) -> list[str]:
    """Traps, the task started in the background, the wait, the task's exit status.

    USR1 and TERM received by the batch shell go to the task's process; a trap ends ``wait``
    early (128+signal) while the task still runs, so the shell waits again. With ``warned``,
    ``on_warned_failure`` runs when the warning came and the task did not succeed (e.g. Slurm's
    requeue).
    """
    note = warned and on_warned_failure is not None
    mark = "campaign_warned=1; " if note else ""
    lines = [
        *(["campaign_warned=0"] if note else []),
        "campaign_woken=0",
        "campaign_pid=",
        f'trap \'{mark}campaign_woken=1; [ -z "$campaign_pid" ] || '
        f'kill -{WARNING_SIGNAL} "$campaign_pid" 2>/dev/null || true\' {WARNING_SIGNAL}',
        'trap \'campaign_woken=1; [ -z "$campaign_pid" ] || '
        'kill -TERM "$campaign_pid" 2>/dev/null || true\' TERM',
        *task_function(tasks),
        "campaign_pid=$!",
        "while :; do",
        "  campaign_woken=0",
        '  wait "$campaign_pid" && campaign_status=0 || campaign_status=$?',
        # A trap ended wait early (128+signal): wait again. For a task still running that waits
        # for its end; for one already reaped, bash returns the saved status (not kill -0, which
        # cannot see a task bash has already collected)...
        '  if [ "$campaign_woken" = 1 ] && [ "$campaign_status" -gt 128 ]; then '
        "campaign_cut=$campaign_status; continue; fi",
        "  break",
        "done",
        # ... except when bash collected it while running the trap: then the second wait says
        # -1 (seen with bash 5.2 in the local backend's time-limit test, about one run in five).
        # The task died of the signal just passed to it, which is what the cut wait reported.
        '[ "$campaign_status" -ge 0 ] || campaign_status=$campaign_cut',
    ]
    if note:
        lines += [
            'if [ "$campaign_warned" = 1 ] && [ "$campaign_status" != 0 ]; then',
            f"  {on_warned_failure}",
            "fi",
        ]
    return [*lines, 'exit "$campaign_status"']
