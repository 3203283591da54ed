"""The part every backend's rendered script shares (runner.script), as the tests expect it.

Each backend's tests compare whole scripts: their own directives and head, then these blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

TRAPS = """\
campaign_woken=0
campaign_pid=
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -USR1 "$campaign_pid" 2>/dev/null || true' USR1
trap 'campaign_woken=1; [ -z "$campaign_pid" ] || kill -TERM "$campaign_pid" 2>/dev/null || true' TERM
"""
WAIT = """\
campaign_pid=$!
while :; do
  campaign_woken=0
  wait "$campaign_pid" && campaign_status=0 || campaign_status=$?
  if [ "$campaign_woken" = 1 ] && [ "$campaign_status" -gt 128 ]; then campaign_cut=$campaign_status; continue; fi
  break
done
[ "$campaign_status" -ge 0 ] || campaign_status=$campaign_cut
"""
EXIT = 'exit "$campaign_status"\n'
# With preconditions: the function each failed test calls, before the traps.
PRECONDITION_FAILED = """\
campaign_precondition_failed() {
  echo "campaign: precondition failed: $1 $2: $3" >&2
  exit 96
}
"""
# With outputs: before the traps, and after the wait.
OUTPUT_INIT = "campaign_output=\ncampaign_mark=\n"
OUTPUT_CHECK = """\
if [ "$campaign_status" = 0 ] && [ -n "$campaign_output" ]; then
  if [ -d "$campaign_output" ]; then [ -n "$(ls -A -- "$campaign_output")" ]; else [ -s "$campaign_output" ]; fi || {
    echo "campaign: output-missing: $campaign_output" >&2
    campaign_status=97
  }
fi
if [ "$campaign_status" = 0 ] && [ -n "$campaign_mark" ] && [ "$campaign_output" -ot "$campaign_mark" ] && [ -z "$(find "$campaign_output" -newer "$campaign_mark" -print 2>/dev/null | head -n 1)" ]; then
  echo "campaign: output-missing: $campaign_output (older than the task: not written by it)" >&2
  campaign_status=97
fi
[ -z "$campaign_mark" ] || rm -f -- "$campaign_mark"
"""


# A task whose output is outside ${CAMPAIGN_OUT}/ gets a mark just before it starts.
MARK = '    campaign_mark="$(mktemp)"\n'


def _staged(word: str | None) -> bool:
    return word is not None and word.startswith('"${CAMPAIGN_OUT}"/')


def case(*commands: str, outputs: Sequence[str | None] = (), configs: Sequence[str] = ()) -> str:
    """The task dispatch for ``commands``: one branch per index, each in the background; a
    task with a config fingerprint exports it, a task with an output (given as the shell word
    the script holds) sets it first."""
    branches = "".join(
        f"  {i})\n"
        + (f"    export CAMPAIGN_CONFIG={configs[i]}\n" if configs else "")
        + (f"    campaign_output={outputs[i]}\n" if outputs and outputs[i] is not None else "")
        + (MARK if outputs and outputs[i] is not None and not _staged(outputs[i]) else "")
        + f"    ( {c}\n    ) &\n    ;;\n"
        for i, c in enumerate(commands)
    )
    return (
        'case "$CAMPAIGN_TASK_INDEX" in\n'
        + branches
        + "  *)\n"
        + '    echo "campaign: this job has no task $CAMPAIGN_TASK_INDEX" >&2\n'
        + "    exit 64\n"
        + "    ;;\n"
        + "esac\n"
    )
