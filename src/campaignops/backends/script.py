"""The part of every rendered job script that runs the task, shared by all backends.

The task for ``$CAMPAIGN_TASK_INDEX`` is started in the background of the batch shell, which
then waits for it. Signals the batch shell receives — the warning before the time limit
(Slurm's ``--signal=B:USR1@N``, PBS's timer, the local executor) and TERM — are passed to the
task's main process (the program, or the wrapper, which passes them on), not to every process of
the job: a task that traps USR1 checkpoints and exits on its own terms (the wrappers exit 99), and
its helpers (data loaders, `sleep`) are not killed by a warning they never asked for. The
script's exit status is the task's.

Around the task, the script keeps the manifest's promises about files: the job's
``preconditions`` are tested before the task starts (a failed one: exit 96, the task never runs),
and a task that exited 0 without its ``output`` (missing, an empty file or an empty directory)
ends with exit 97. Each says why in one ``campaign: …`` line on stderr (the task's log), and
``REASONS`` names the exit code in the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from campaignops.core.errors import UsageError
from campaignops.model.jobspec import CONFIG_VAR, TASK_INDEX, JobSpec, Precondition
from campaignops.model.taskfiles import (
    PRECONDITION_TYPES,
    output_problem,
    path_problem,
    shell_word,
    under_stage_root,
)

WARNING_SIGNAL = "USR1"
PRECONDITION_EXIT = 96
OUTPUT_MISSING_EXIT = 97
# The exit codes of the script's own checks, and the reason each stands for in the ledger. A
# task that itself exits 96 or 97 reads the same; only the script writes the `campaign:` line.
REASONS: Mapping[int, str] = MappingProxyType(
    {PRECONDITION_EXIT: "precondition", OUTPUT_MISSING_EXIT: "output-missing"}
)


def _output_word(index: int, output: str) -> str:
    problem = output_problem(output)
    if problem is not None:
        raise UsageError(
            message=f"task {index}: output path {output!r} {problem}",
            hint="write outputs relative to the campaign root, e.g. ${CAMPAIGN_OUT}/<id>/metrics.json",
        )
    return shell_word(output)


PRECONDITION_FAILED = [
    "campaign_precondition_failed() {",
    '  echo "campaign: precondition failed: $1 $2: $3" >&2',
    f"  exit {PRECONDITION_EXIT}",
    "}",
]


def preconditions_check(
    preconditions: Sequence[Precondition], *, per_task: bool = False
) -> list[str]:
    """Test each precondition before the task starts; the first that fails ends the job's task
    with PRECONDITION_EXIT and one line naming the type, the path (expanded) and what is wrong.
    ``per_task``: the tests of one task's own preconditions (the function is defined once,
    with the job-wide ones: see body)."""
    if not preconditions and not per_task:
        return []
    lines = [] if per_task else list(PRECONDITION_FAILED)
    for pre in preconditions:
        kind = PRECONDITION_TYPES.get(pre.type)
        if kind is None:
            raise UsageError(
                message=f"precondition type {pre.type!r} is not one the runner checks",
                hint="use one of: " + ", ".join(sorted(PRECONDITION_TYPES)),
            )
        problem = path_problem(pre.path)
        if problem is not None:
            raise UsageError(
                message=f"precondition {pre.type} path {pre.path!r} {problem}",
                hint="write the path as it is on disk; ${NAME} reads an environment variable",
            )
        word = shell_word(pre.path)
        lines.append(
            f"{kind.test.format(path=word)} || "
            f"campaign_precondition_failed {pre.type} {word} {shell_word(kind.fails)}"
        )
    return lines


def task_function(
    tasks: Sequence[str],
    outputs: Sequence[str | None] = (),
    task_preconditions: Sequence[Sequence[Precondition]] = (),
    configs: Sequence[str] = (),
) -> list[str]:
    """Start the index's command in the background; ``$!`` is then the task's own process.

    ``( command` newline `) &``: bash runs a lone simple command in such a subshell by exec, so
    the process the signals go to is the program itself; the closing parenthesis on a line of
    its own keeps a trailing comment in the command from swallowing it. A task with an output
    sets ``campaign_output`` first (expanded before the task starts: an unset variable stops
    the script there, under ``set -u``).
    """
    given_lists = (("output paths", outputs), ("precondition lists", task_preconditions))
    for name, given in (*given_lists, ("config fingerprints", configs)):
        if given and len(given) != len(tasks):
            raise UsageError(
                message=f"{len(given)} {name} for {len(tasks)} tasks",
                hint="give one per task (an output may be None), in task order",
            )
    lines = [f'case "${TASK_INDEX}" in']
    for index, command in enumerate(tasks):
        output = outputs[index] if outputs else None
        lines.append(f"  {index})")
        if configs and configs[index]:
            lines.append(f"    export {CONFIG_VAR}={shell_word(configs[index])}")
        if task_preconditions:
            own = preconditions_check(task_preconditions[index], per_task=True)
            lines += [f"    {line}" for line in own]
        if output is not None:
            lines.append(f"    campaign_output={_output_word(index, output)}")
            if not under_stage_root(output):
                lines.append(f"    {OUTPUT_MARK}")
        lines += [f"    ( {command}", "    ) &", "    ;;"]
    lines += [
        "  *)",
        f'    echo "campaign: this job has no task ${TASK_INDEX}" >&2',
        "    exit 64",
        "    ;;",
        "esac",
    ]
    return lines


# Made just before a task whose output is outside ${CAMPAIGN_OUT}/ starts: an output older
# than it was not written by this task (docs/decisions.md).
OUTPUT_MARK = 'campaign_mark="$(mktemp)"'


def output_check() -> list[str]:
    """After a task that exited 0: its output must be a non-empty file or a directory with an
    entry, and, outside ${CAMPAIGN_OUT}/, written since the task started (not older than the
    mark made before it: a file left by an earlier run or another stage is not this task's; a
    directory counts when it or an entry in it is), else the task ends with
    OUTPUT_MISSING_EXIT and says which path."""
    return [
        'if [ "$campaign_status" = 0 ] && [ -n "$campaign_output" ]; then',
        '  if [ -d "$campaign_output" ]; then [ -n "$(ls -A -- "$campaign_output")" ]; '
        'else [ -s "$campaign_output" ]; fi || {',
        '    echo "campaign: output-missing: $campaign_output" >&2',
        f"    campaign_status={OUTPUT_MISSING_EXIT}",
        "  }",
        "fi",
        'if [ "$campaign_status" = 0 ] && [ -n "$campaign_mark" ] && '
        '[ "$campaign_output" -ot "$campaign_mark" ] && '
        '[ -z "$(find "$campaign_output" -newer "$campaign_mark" -print 2>/dev/null | head -n 1)" ]; then',
        '  echo "campaign: output-missing: $campaign_output (older than the task: not written '
        'by it)" >&2',
        f"  campaign_status={OUTPUT_MISSING_EXIT}",
        "fi",
        '[ -z "$campaign_mark" ] || rm -f -- "$campaign_mark"',
    ]


def body(
    tasks: Sequence[str],
    *,
    warned: bool,
    on_warned_failure: str | None = None,
    outputs: Sequence[str | None] = (),
    preconditions: Sequence[Precondition] = (),
    task_preconditions: Sequence[Sequence[Precondition]] = (),
    configs: Sequence[str] = (),
) -> list[str]:
    """Preconditions, traps, the task started in the background, the wait, the output check,
    the task's exit status.

    USR1 and TERM received by the batch shell go to the task's process; a trap ends ``wait``
    early (128+signal) while the task still runs, so the shell waits again. With ``warned``,
    ``on_warned_failure`` runs when the warning came and the task did not succeed (e.g. Slurm's
    requeue) — a task that exited 0 without its output included: it may have saved a
    checkpoint and stopped early without knowing the wrappers' convention (exit 99).
    """
    note = warned and on_warned_failure is not None
    mark = "campaign_warned=1; " if note else ""
    checked = any(o is not None for o in outputs)
    per_task = any(task_preconditions)
    lines = [
        *preconditions_check(preconditions),
        *(PRECONDITION_FAILED if per_task and not preconditions else []),
        *(["campaign_output=", "campaign_mark="] if checked else []),
        *(["campaign_warned=0"] if note else []),
        "campaign_woken=0",
        "campaign_pid=",
        f'trap \'{mark}campaign_woken=1; [ -z "$campaign_pid" ] || '
        f'kill -{WARNING_SIGNAL} "$campaign_pid" 2>/dev/null || true\' {WARNING_SIGNAL}',
        'trap \'campaign_woken=1; [ -z "$campaign_pid" ] || '
        'kill -TERM "$campaign_pid" 2>/dev/null || true\' TERM',
        *task_function(tasks, outputs, task_preconditions if per_task else (), configs),
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
        *(output_check() if checked else []),
    ]
    if note:
        lines += [
            'if [ "$campaign_warned" = 1 ] && [ "$campaign_status" != 0 ]; then',
            f"  {on_warned_failure}",
            "fi",
        ]
    return [*lines, 'exit "$campaign_status"']


def spec_body(spec: JobSpec, *, warned: bool, on_warned_failure: str | None = None) -> list[str]:
    """``body`` for a job spec: its tasks, outputs, preconditions and config fingerprints."""
    return body(
        spec.tasks,
        warned=warned,
        on_warned_failure=on_warned_failure,
        outputs=spec.outputs,
        preconditions=spec.preconditions,
        task_preconditions=spec.task_preconditions,
        configs=spec.configs,
    )
