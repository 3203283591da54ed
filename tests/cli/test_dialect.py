"""One dialect (issue 21): the parser is walked, so a command added without the rules fails here.

Every command: ``--format`` with json among its names, the names from one list (contract.FORMATS),
old names through the alias table; a shipped output schema; an entry in contract.EFFECTS, and
``--dry-run`` when it changes something outside the repository; positional names in capitals,
options in kebab-case. Each command's usage error under ``--format json`` is its error document.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest

from campaignops import cli
from campaignops.cli import contract, schemas
from campaignops.core.errors import UsageError
from tests import jsoncontract

PARSER = cli.build_parser()
LEAVES = dict(contract.leaves(PARSER))


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def test_the_walk_finds_every_command_and_subcommand() -> None:
    assert {"check", "submit", "audit", "audit-resources", "lesson-add", "publish-issue"} <= set(
        LEAVES
    )
    assert "lesson" not in LEAVES and "publish" not in LEAVES  # groups run nothing themselves


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_every_command_speaks_the_dialect(name: str) -> None:
    parser = LEAVES[name]
    fmt = _option(parser, "--format")
    if name in contract.SERVERS:  # its stdout is a protocol: no --format, no document
        assert fmt is None, f"campaign {name} serves a protocol on stdout: no --format"
        assert contract.EFFECTS.get(name) == "reads"
        return
    assert fmt is not None, f"campaign {name}: no --format"
    assert fmt.choices is not None and "json" in fmt.choices, f"campaign {name}: no json"
    assert set(fmt.choices) <= set(contract.FORMATS), f"campaign {name}: {fmt.choices}"
    assert fmt.type is contract.format_name, f"campaign {name}: --format without the aliases"
    assert fmt.default in fmt.choices
    assert name in contract.EFFECTS, f"campaign {name}: say what it changes in contract.EFFECTS"
    if contract.EFFECTS[name] == "outside":
        dry = _option(parser, "--dry-run")
        assert dry is not None, f"campaign {name} changes something outside: no --dry-run"
    for action in parser._actions:
        if action.option_strings:
            for flag in action.option_strings:
                assert re.fullmatch(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*|-[a-zA-Z]", flag), flag
        elif not isinstance(action, argparse._SubParsersAction):
            shown = action.metavar or action.dest
            assert isinstance(shown, str) and re.fullmatch(r"[A-Z][A-Z_\[\]]*", shown), shown


def test_every_command_has_a_schema_and_every_schema_a_command() -> None:
    assert set(schemas.names()) == {*LEAVES, contract.NO_COMMAND}
    assert set(contract.EFFECTS) == set(LEAVES)
    for name in schemas.names():
        schema = schemas.output_schema(name)
        assert schema["properties"]["schema"] == {"const": contract.schema_id(name)}
        assert schema["type"] == "object" and schema["additionalProperties"] is True
        jsoncontract.validator(name)  # a valid Draft 2020-12 schema


def test_every_schema_describes_the_same_error() -> None:
    errors = {json.dumps(schemas.output_schema(n)["$defs"]["error"]) for n in schemas.names()}
    assert len(errors) == 1
    assert schemas.output_schema("error")["$defs"]["error"]["properties"]["kind"]["enum"] == list(
        contract.KINDS
    )


def test_an_unknown_schema_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no output schema for 'nope'"):
        schemas.output_schema("nope")


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", sorted(LEAVES))
def test_a_usage_error_under_json_is_the_commands_error_document(name: str) -> None:
    argv = [*name.split("-"), "--format", "json", "--no-such-option"]
    code, out, err = _run(argv)
    doc = jsoncontract.check(argv, out, code)
    assert code == 2 and doc is not None
    assert doc["schema"] == f"campaignops/{name}/v1"
    assert doc["error"]["kind"] == "usage"
    assert doc["error"]["message"]  # the option, or an argument the command needs first
    assert doc["error"]["hint"] == f"see campaign {name.replace('-', ' ')} --help"
    assert f"error: {doc['error']['message']}" in err  # people still get argparse's lines


@pytest.mark.parametrize(
    "argv",
    [
        ["--format", "json"],
        ["bogus", "--format=json"],
        ["lesson", "--format", "json"],
        ["status", "--format", "json", "--interval", "soon"],
        ["split", "queues/x.txt", "--format", "json"],  # -n is required
    ],
)
def test_usage_errors_without_a_command_or_with_bad_values(argv: list[str]) -> None:
    code, out, _ = _run(argv)
    doc = jsoncontract.check(argv, out, code)
    assert code == 2 and doc is not None and doc["error"]["kind"] == "usage"


def test_without_json_a_usage_error_is_still_argparses() -> None:
    with pytest.raises(SystemExit) as exc:
        _run(["check", "--no-such-option"])
    assert exc.value.code == 2


def test_run_json_gives_the_exit_code_and_the_document() -> None:
    code, doc = cli.run_json(["checks"])
    assert code == 0 and doc["schema"] == "campaignops/checks/v1" and doc["families"]
    code, doc = cli.run_json(["lesson", "add"])  # the WHAT_FAILED argument is missing
    assert code == 2 and doc["schema"] == "campaignops/lesson-add/v1"
    assert doc["error"]["kind"] == "usage"


def test_the_old_format_names_still_work() -> None:
    args = PARSER.parse_args(["status", "--format", "table"])
    assert args.format == "text"
    fmt = _option(LEAVES["status"], "--format")
    assert fmt is not None and fmt.choices is not None and "table" not in fmt.choices
