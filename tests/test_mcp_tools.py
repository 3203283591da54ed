"""campaignops.mcp.tools: the tools `campaign mcp` offers, their input schemas read from the
commands' parsers, a call's arguments turned back into words, and who allows what (without the
SDK: tests/scenarios/test_mcp.py drives the server itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaignops.cli import build_parser
from campaignops.core.errors import UsageError
from campaignops.mcp import tools
from tests.conftest import git


def _tool(name: str, may: tuple[str, ...] = ()) -> tools.Tool:
    (found,) = [t for t in tools.offered(build_parser(), may) if t.spec.name == name]
    return found


def test_a_tool_call_becomes_the_commands_words() -> None:
    split = _tool("split")
    schema = tools.input_schema(split)
    assert schema["required"] == ["queue", "n"] and schema["properties"]["n"]["type"] == "integer"
    assert "dry_run" not in schema["properties"] and "out_dir" not in schema["properties"]
    words = tools.argv(split, {"queue": "queues/a.txt", "n": 4, "cost": "history"})
    assert words == [
        "split",
        "queues/a.txt",
        "-n4",
        "--cost=history",
        "--dry-run",
        "--format",
        "json",
    ]
    submit = _tool("submit", may=("submit",))
    words = tools.argv(submit, {"manifest": "m.yaml", "stage": "smoke", "targets": ["a", "b"]})
    assert words == ["submit", "m.yaml", "--stage=smoke", "--targets", "a", "b", "--format", "json"]
    lesson = _tool("lesson_add", may=("lesson add",))
    assert tools.argv(lesson, {"failed": "x", "fixed": "y"})[:4] == ["lesson", "add", "x", "y"]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"manifest": "m.yaml", "stage": "smoke", "override": "why"}, "no argument override"),
        ({"manifest": "--override=x", "stage": "smoke"}, "may not start with '-'"),
        ({"manifest": "m.yaml", "stage": "smoke", "targets": ["--override"]}, "may not start"),
        ({"manifest": "m.yaml", "stage": "smoke", "failed": "yes"}, "takes true or false"),
        ({"manifest": ["m.yaml"], "stage": "smoke"}, "takes a string"),
    ],
)
def test_no_argument_becomes_an_option_the_tool_does_not_offer(
    arguments: dict[str, object], said: str
) -> None:
    with pytest.raises(UsageError) as caught:
        tools.argv(_tool("submit", may=("submit",)), arguments)
    assert said in caught.value.message


def test_the_mutating_tools_are_offered_only_as_the_committed_policy_says(tmp_path: Path) -> None:
    names = {t.spec.name for t in tools.offered(build_parser(), ())}
    read_only = {"check", "status", "diagnose", "review", "audit", "report", "split"}
    assert names == {*read_only, "submit_dry_run"}
    git(tmp_path, "init", "-q")
    policy = tmp_path / "campaign.yaml"
    policy.write_text("name: x\nagents: {may: [cancel]}\n", encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "a person allows cancel")
    assert tools.allowed(tmp_path) == ("cancel",)
    # An edit that is not committed allows nothing more (an agent can edit the working tree).
    policy.write_text("name: x\nagents: {may: [cancel, submit, release]}\n", encoding="utf-8")
    assert tools.allowed(tmp_path) == ("cancel",)
    assert tools.allowed(tmp_path / "nowhere") == ()


def test_the_answer_is_the_commands_document_and_a_refusal_asks_a_person() -> None:
    from campaignops.mcp import calls

    submit = _tool("submit", may=("submit",))
    json_submit = tools.Tool(spec=submit.spec, parser=submit.parser, speaks_json=True)
    refusal = (
        '{"schema": "campaignops/submit/v1", "error": {"kind": "refused", "message": '
        '"smoke_first: no completed smoke", "hint": "submit --stage smoke first"}}'
    )
    done = calls.answer(json_submit, 1, refusal, "")
    assert done.document["error"]["kind"] == "refused" and not done.error
    assert "refused by a gate, nothing was submitted" in done.text and "ask them" in done.text
    # A JSON command that printed no document: an error, not held to its output schema.
    assert calls.answer(json_submit, 1, "", "campaign: error: boom\n").error
    # A command without JSON output (none today): its text in the server's own small document.
    text_submit = tools.Tool(spec=submit.spec, parser=submit.parser, speaks_json=False)
    text = calls.answer(text_submit, 0, "submitted x as job 7\n", "")
    assert text.document == {
        "schema": calls.TEXT_SCHEMA,
        "command": "submit",
        "exit_code": 0,
        "stdout": "submitted x as job 7\n",
        "stderr": "",
    }
    assert not text.error and "ask" not in text.text
    findings = calls.answer(_tool("check"), 1, '{"findings": []}', "")
    assert not findings.error and "ask a person" not in findings.text


def test_a_shipped_output_schema_is_the_tools_output_schema(tmp_path: Path) -> None:
    status = _tool("status")
    assert status.speaks_json and tools.output_schema(status, tmp_path) is None  # none shipped
    (tmp_path / "status.v1.schema.json").write_text('{"oneOf": [{"required": ["jobs"]}]}')
    assert tools.output_schema(status, tmp_path) == {
        "type": "object",
        "oneOf": [{"required": ["jobs"]}],
    }
    submit = _tool("submit_dry_run")
    (tmp_path / "submit.v1.schema.json").write_text('{"type": "object"}')
    # Only a command that prints JSON is held to its schema.
    assert tools.output_schema(submit, tmp_path) == (
        {"type": "object"} if submit.speaks_json else None
    )
