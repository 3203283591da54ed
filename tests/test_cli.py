"""The CLI surface: output formats compared in full, exit codes, help, `python -m`."""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from campaignops import cli
from campaignops.checks import registry
from tests import sshboxes
from tests.conftest import GRIDENGINE_DEV, _cluster_module

DUP = "jobs:\n  - id: a\n  - id: a\ndefault_cmd: python3 run.py\n"  # runnable, but for the id


def plant(campaign: Path) -> str:
    rel = "manifests/dup.yaml"
    (campaign / rel).write_text(DUP)
    return rel


def test_text_format_in_full(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    plant(campaign)
    result = run("check", "--select", "MAN")
    assert result.code == 1
    assert result.out == (
        "manifests/dup.yaml:3:9: MAN002 duplicate target id 'a' (first defined at line 2)\n"
        "  hint: give every target a unique id; for grids, put every grid key in template.id\n"
        "1 finding in 1 file.\n"
    )
    assert result.err == ""


def test_github_format_in_full(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    plant(campaign)
    result = run("check", "--select", "MAN", "--format", "github")
    assert result.code == 1
    assert result.out == (
        "::error file=manifests/dup.yaml,line=3,col=9,title=MAN002::MAN002 duplicate target id"
        " 'a' (first defined at line 2) (hint: give every target a unique id; for grids, put"
        " every grid key in template.id)\n"
    )


def test_github_format_escapes_properties_and_data(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    # A comma or colon in a file name would end the property; a newline would end the command.
    (campaign / "manifests" / "a,b:c.yaml").write_text(DUP)
    out = run("check", "--select", "MAN", "--format", "github").out
    assert out.startswith("::error file=manifests/a%2Cb%3Ac.yaml,line=3,")


def test_json_format_shape(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    plant(campaign)
    data = json.loads(run("check", "--select", "MAN", "--format", "json").out)
    assert data == {
        "schema": "campaignops/check/v1",
        "findings": [
            {
                "path": "manifests/dup.yaml",
                "line": 3,
                "col": 9,
                "id": "MAN002",
                "message": "duplicate target id 'a' (first defined at line 2)",
                "hint": "give every target a unique id; for grids, put every grid key in template.id",
            }
        ],
        "errors": [],
    }


def test_paths_are_shown_relative_to_the_working_directory(
    campaign: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    plant(campaign)
    monkeypatch.chdir(campaign / "manifests")
    result = run("check", "--select", "MAN", "--format", "json")
    assert result.where() == [("dup.yaml", 3, "MAN002")]


def test_clean_campaign_exits_0_silently(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("check")
    assert (result.code, result.out, result.err) == (0, "", "")


def test_checks_lists_every_id(run) -> None:  # type: ignore[no-untyped-def]
    out = run("checks").out
    for family in registry.FAMILIES.values():
        assert f"{family.name}: {family.summary}" in out
        for cid in family.codes:
            assert f"  {cid}  " in out


def test_checks_shows_messages_readably_in_id_order(run) -> None:  # type: ignore[no-untyped-def]
    out = run("checks").out
    # Format fields read as <name>, not as Python's template syntax.
    assert "  MAN001  <problem>\n" in out
    assert "placeholder ${<name>} is not defined by the grid<where>" in out
    assert "grid expands to <count> targets, more than the <limit> this check expands" in out
    assert "duplicate target id '<target>' (<origin>)" in out
    assert not re.search(r"\{\w+(![rsa])?(:[^}]*)?\}|\{\{", out), out
    ids = re.findall(r"^  ([A-Z]+\d{3})  ", out, flags=re.MULTILINE)
    for family in registry.FAMILIES:
        own = [i for i in ids if i[: len(family)] == family and i[len(family) :].isdigit()]
        assert own == sorted(own), own


def test_the_reference_family_table_lists_each_family_once() -> None:
    # The README's reference material lives in docs/reference.md (the user guide, issue 20).
    readme = (Path(__file__).resolve().parents[1] / "docs/reference.md").read_text(encoding="utf-8")
    table = readme.split("| family | checks |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([A-Z]+)` \|", table, flags=re.MULTILINE)
    assert rows == list(registry.FAMILIES), rows


def test_the_readme_names_what_the_tests_install_as_root() -> None:
    """The README does not say "only python3 and git" of the tests when, as root, they install
    a Slurm cluster's, a Grid Engine cell's and two SSH boxes' Debian packages (dev/test.sh)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    said = " ".join(readme.split())
    gridengine = _cluster_module(GRIDENGINE_DEV).PACKAGES
    for package in (*_cluster_module().PACKAGES, *gridengine, *sshboxes.PACKAGES):
        assert f"`{package}`" in said, package
    assert "as root, `dev/test.sh` first installs" in said


def test_the_reference_counts_the_catalog_entries_every_campaign_gets() -> None:
    root = Path(__file__).resolve().parents[1]
    catalog = root / "template" / "{{cookiecutter.campaign_slug}}" / "failures.yaml"
    common = catalog.read_text(encoding="utf-8").split("{%", 1)[0]  # before the domain blocks
    count = len(re.findall(r"^  - id: ", common, flags=re.MULTILINE))
    readme = (root / "docs/reference.md").read_text(encoding="utf-8")
    assert f"the upstream failure catalog ({count} entries + domain entries;" in readme


def test_ids_are_family_plus_three_digits() -> None:
    for name, family in registry.FAMILIES.items():
        for cid in family.codes:
            assert cid[: len(name)] == name and cid[len(name) :].isdigit()
            assert len(cid) == len(name) + 3


def test_help_documents_every_check_option() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "campaignops", "check", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for option in ("--select", "--ignore", "--base", "--fix", "--today", "--format", "PATH"):
        assert option in out
    assert "exit codes: 0 clean, 1 findings, 2 usage error or unreadable input" in out


def test_every_command_has_help() -> None:
    for command in ("check", "lock", "render", "checks"):
        proc = subprocess.run(
            [sys.executable, "-m", "campaignops", command, "--help"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0 and "usage: campaign" in proc.stdout


def test_version_and_module_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "campaignops", "--version"], capture_output=True, text=True
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "campaignops 0.1.0")


def test_unknown_select_is_a_usage_error(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = run("check", "--select", "MAN99")
    assert result.code == 2
    assert "--select MAN99: no such check family or ID" in result.err


def test_closed_pipe_is_not_a_traceback(campaign: Path) -> None:
    for i in range(200):
        (campaign / "manifests" / f"d{i}.yaml").write_text(DUP)
    proc = subprocess.run(
        f"{sys.executable} -m campaignops check | head -1",
        shell=True,
        cwd=campaign,
        capture_output=True,
        text=True,
    )
    assert proc.stdout.startswith("manifests/d0.yaml:3:9: MAN002")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("audit", [["audit"], ["audit", "resources"]])
def test_audit_outside_a_campaign_says_where_to_run_it(  # type: ignore[no-untyped-def]
    audit: list[str], run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(*audit)
    assert result.code == 2
    assert "no campaign.yaml here or above" in result.err
    assert "run inside a campaign repository (campaign new creates one)" in result.err
    assert "pass the files" not in result.err  # the audit takes no files


def test_the_readme_starts_with_exactly_two_set_up_commands() -> None:
    """DEVELOPERS.md: the README starts with two set-up commands on a fresh machine, the main
    job end to end on the local backend, then the tests."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    first = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in first.splitlines() if line.strip()]
    assert commands == ["bash dev/demo.sh", "bash dev/test.sh"], commands


def test_commands_run_in_one_process_build_the_parser_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build is ~10 ms of CPU (argparse's gettext look-ups): `campaign mcp` and a program
    calling ``run`` in a loop pay it once, not per command."""
    builds: list[int] = []
    real = cli.build_parser

    def counted() -> argparse.ArgumentParser:
        builds.append(1)
        return real()

    monkeypatch.setattr(cli, "build_parser", counted)
    shared = getattr(cli, "shared_parser", None)
    if shared is not None:
        shared.cache_clear()
    for _ in range(3):
        assert cli.run(["checks"], io.StringIO(), io.StringIO()) == 0
    assert len(builds) == 1
