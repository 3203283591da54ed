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
    assert words == ["submit", "m.yaml", "--stage=smoke", "--targets", "a", "b"]
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
    assert names == {"check", "status", "diagnose", "review", "audit", "split", "submit_dry_run"}
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
