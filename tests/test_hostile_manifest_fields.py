"""Manifest fields that reach a command line or a directive are validated, through the CLI.

Found by an adversarial pass: ``smoke.args`` keys went into the command unquoted
(``{"epochs; touch runs/X; echo": 1}`` ran ``touch``), ids a grid expands to skipped the id
pattern, and a U+2028 in such an id split the ``#LOCAL --job-name`` line, so the executor read a
truncated job name. Each is now a finding at its place (MAN001 or MAN015), and submit refuses it
(exit 2) before anything is rendered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git

MANIFEST = "manifests/example.yaml"


def edit(root: Path, old: str, new: str) -> None:
    path = root / MANIFEST
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    git(root, "commit", "-qam", "edit the manifest")


def refused(run, where: str, message: str) -> None:  # type: ignore[no-untyped-def]
    """check reports ``message`` at ``where``; submit (dry run or not) refuses the same."""
    checked = run("check", "--format", "json", MANIFEST)
    assert checked.code == 1, checked.err
    (finding,) = checked.json()["findings"]
    assert (f"{finding['path']}:{finding['line']}:{finding['col']}", finding["message"]) == (
        f"{MANIFEST}:{where}",
        message,
    )
    for extra in (("--dry-run",), ()):
        sub = run("submit", MANIFEST, "--stage", "smoke", *extra)
        assert sub.code == 2
        assert sub.out == ""
        assert sub.err.startswith(f"campaign: error: {MANIFEST}:{where}: {finding['id']} {message}")


def test_smoke_args_key_with_shell_words_is_refused(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    edit(demo, "args: {epochs: 2}", 'args: {"epochs; touch runs/X; echo": 1}')
    refused(
        run,
        "18:9",
        "smoke.args: 'epochs; touch runs/X; echo' does not match '^[A-Za-z_][A-Za-z0-9_.-]*$'",
    )
    assert not (demo / "runs").exists()
    assert not (demo / ".campaign/local").exists()


@pytest.mark.parametrize(
    ("old", "new", "where", "key"),
    [
        ("args: {epochs: 20}", 'args: {"epochs\\n": 20}', "26:10", "template.args key"),
        ("args: {epochs: 2}", 'args: {"epochs\\n": 2}', "18:10", "smoke.args key"),
    ],
)
def test_args_key_with_a_trailing_newline_is_refused(  # type: ignore[no-untyped-def]
    demo: Path, run, old: str, new: str, where: str, key: str
) -> None:
    # The schema's `$` lets "epochs\n" through in Python's re: the key check uses fullmatch.
    edit(demo, old, new)
    refused(
        run,
        where,
        f"{key} 'epochs\\n' is not an option name "
        "(letters, digits and _ . -, starting with a letter or _)",
    )


@pytest.mark.parametrize("value", ["wi\u2028de", "wi\u2029de", "wi\x85de", "w;ide", "wi de"])
def test_a_grid_expanded_id_is_checked_against_the_id_pattern(  # type: ignore[no-untyped-def]
    demo: Path, run, value: str
) -> None:
    edit(demo, "cfg: [baseline, wide]", f"cfg: [baseline, {json.dumps(value)}]")
    refused(
        run,
        "24:7",
        f"target id (grid cell cfg={value!r}, task='reconstruction') "
        f"{value + '_reconstruction'!r} is not an id "
        "(letters, digits and . _ + = -, starting with a letter or digit)",
    )
    assert not (demo / ".campaign/local").exists()


def test_a_grid_expanded_id_over_the_length_limit_is_refused(demo: Path, run) -> None:  # type: ignore[no-untyped-def]
    long = "w" * 190
    edit(demo, "cfg: [baseline, wide]", f"cfg: [baseline, {long}]")
    refused(
        run,
        "24:7",
        f"target id (grid cell cfg={long!r}, task='reconstruction') "
        f"{long + '_reconstruction'!r} is 205 characters long; ids have at most 200",
    )
