"""`campaign guard`: a corpus of recorded Claude Code PreToolUse inputs (tests/data/guard/,
each file named allow-… or deny-…), decided through the command as the hook runs it, with no
wrong decision; and the shapes it answers in."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import jsonschema
import pytest

from campaignops.backends.registry import KINDS
from campaignops.gitops import guard

OUTPUT_SCHEMA = (
    Path(__file__).resolve().parents[1] / "src/campaignops/schemas/output/guard.v1.schema.json"
)

CORPUS = sorted((Path(__file__).parent / "data" / "guard").glob("*.json"))


def _hook(run, monkeypatch: pytest.MonkeyPatch, text: str, *more: str):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    return run("guard", *more)


def test_the_corpus_is_large_enough_and_holds_both_decisions() -> None:
    kinds = [p.name.split("-", 1)[0] for p in CORPUS]
    assert len(CORPUS) >= 40 and set(kinds) == {"allow", "deny"}, kinds


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_each_recorded_hook_input_is_decided_right(
    path: Path,
    run,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for names in guard.ALLOCATIONS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    done = _hook(run, monkeypatch, path.read_text(encoding="utf-8"), "--format", "hook")
    assert done.code == 0, done.err
    if path.name.startswith("allow-"):
        assert done.out == "", done.out  # no decision: the agent's own permission rules decide
        return
    shown = json.loads(done.out)["hookSpecificOutput"]
    assert shown["hookEventName"] == "PreToolUse"
    assert shown["permissionDecision"] == "deny"
    assert "Use instead: " in shown["permissionDecisionReason"]


def test_text_and_json_say_the_command_to_use_instead(run) -> None:  # type: ignore[no-untyped-def]
    denied = run("guard", "ssh login1 'cd camp && scancel 12'")
    assert denied.code == 1
    assert "deny: scancel 12 via ssh login1" in denied.out
    assert "instead: campaign cancel JOB" in denied.out
    allowed = run("guard", "campaign cancel 12 --reason oom", "--format", "json")
    assert allowed.code == 0
    assert json.loads(allowed.out) == {
        "schema": "campaignops/guard/v1",
        "decision": "allow",
        "command": "campaign cancel 12 --reason oom",
        "denied": [],
    }
    both = json.loads(run("guard", "sbatch a.sh && git push -f", "--format", "json").out)
    assert [d["rule"] for d in both["denied"]] == ["raw-submit", "force-push"]
    schema = json.loads(OUTPUT_SCHEMA.read_text(encoding="utf-8"))
    for doc in (json.loads(allowed.out), both):
        jsonschema.validate(doc, schema)


def test_srun_inside_an_allocation_is_allowed() -> None:
    line = "srun -n4 python train.py"
    assert not guard.decide(line, env={}).allowed
    assert guard.decide(line, env={"SLURM_JOB_ID": "812"}).allowed


def test_input_that_is_no_hook_json_is_bad_input_which_blocks_the_call(  # type: ignore[no-untyped-def]
    run, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in ("not json", "[1, 2]", '{"tool_name": "Bash", "tool_input": {}}'):
        done = _hook(run, monkeypatch, text, "--format", "hook")
        assert done.code == 2 and "hint:" in done.err, (text, done.err)


def test_the_guarded_scheduler_words_are_the_registered_backends_own() -> None:
    """The guard names no scheduler: each backend under backends/ brings the commands that
    submit and stop its jobs (issue 17: every scheduler word lives under backends/)."""
    schedulers = [k for k in KINDS if k.name not in ("local", "ssh")]
    assert schedulers and all(k.raw_submit and k.raw_cancel for k in schedulers)
    for kind in schedulers:
        for word in kind.raw_submit:
            assert not guard.decide(f"{word} job.sh", env={}).allowed, word
        for word in kind.raw_cancel:
            assert not guard.decide(f"{word} 42", env={}).allowed, word
    assert guard.decide("srun -n1 hostname", env={}).denied[0].rule == "srun-outside-allocation"
    assert guard.decide("srun -n1 hostname", env={"SLURM_JOB_ID": "7"}).allowed
