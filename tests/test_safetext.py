"""Annotations cannot be forged: file names and users' text in every line `campaign` prints.

GitHub's runner takes any stdout or stderr line that starts with ``::`` (after spaces) as a
workflow command, and ``##[command]`` anywhere in a line (actions/runner,
src/Runner.Common/ActionCommand.cs). ``parse_v2`` below replays its V2 parser, so the test
checks what the runner would make of each line, not just its look.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from campaignops.core import safetext
from tests.conftest import TODAY

FORGED = "x\n::error::forged"
STOP = "::stop-commands::tok"
LEGACY = "y ##[error]legacy"
DUP = "jobs:\n  - id: a\n  - id: a\ndefault_cmd: echo run\n"  # a command: the one finding is the duplicate


def parse_v2(line: str) -> tuple[str, dict[str, str], str] | None:
    """(command, properties, data) as the runner reads the line, or None if no command."""
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    name, _, props_text = info.partition(" ")
    props: dict[str, str] = {}
    for pair in filter(None, props_text.strip().split(",")):
        key, sep, value = pair.partition("=")
        if sep and key and value:
            props[key] = (
                value.replace("%0D", "\r")
                .replace("%0A", "\n")
                .replace("%3A", ":")
                .replace("%2C", ",")
                .replace("%25", "%")
            )
    data = message[end + 2 :].replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
    return name, props, data


def check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "campaignops", "check", "--today", TODAY.isoformat(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def hostile(campaign: Path) -> Path:
    """A campaign with unreadable manifests (not UTF-8) and a finding, all with forging names."""
    for name in (FORGED, STOP, LEGACY):
        (campaign / "manifests" / f"{name}.yaml").write_bytes(b"jobs: \xff\n")
    (campaign / "manifests" / f"{FORGED}-dup.yaml").write_text(DUP)
    return campaign


def test_github_format_emits_only_well_formed_annotations(hostile: Path) -> None:
    proc = check(hostile, "--format", "github")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len(lines) == 4  # one per unreadable file, one finding: nothing else
    files = set()
    for line in lines:
        parsed = parse_v2(line)
        assert parsed is not None, line
        command, props, data = parsed
        assert command == "error", line
        assert set(props) <= {"file", "line", "col", "title"}
        assert (hostile / props["file"]).is_file(), props["file"]
        assert "\n" not in line and "\r" not in line
        files.add(props["file"])
        assert data  # the message itself
    assert files == {
        f"manifests/{FORGED}.yaml",
        f"manifests/{STOP}.yaml",
        f"manifests/{LEGACY}.yaml",
        f"manifests/{FORGED}-dup.yaml",
    }


def test_text_format_never_prints_a_command(hostile: Path) -> None:
    proc = check(hostile)
    assert proc.returncode == 2
    lines = (proc.stdout + proc.stderr).splitlines()
    for line in lines:
        assert parse_v2(line) is None, line
        assert safetext.LEGACY_PREFIX not in line, line
    # One error or finding per line, the name shown with its newline escaped.
    starts = (
        "campaign: error: manifests/x\\n::error::forged.yaml: invalid UTF-8",
        "manifests/x\\n::error::forged-dup.yaml:3:9: MAN002",
        "campaign: error: manifests/::stop-commands::tok.yaml: invalid UTF-8",
        "campaign: error: manifests/y ##\\[error]legacy.yaml: invalid UTF-8",
    )
    for start in starts:
        assert any(line.startswith(start) for line in lines), (start, lines)


def test_a_top_level_error_is_an_annotation_too(tmp_path: Path) -> None:
    proc = check(tmp_path, "--format", "github")
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert parse_v2(line) == (
        "error",
        {"title": "campaign"},
        f"no campaign.yaml in {tmp_path} or any parent directory (hint: run inside a campaign "
        "repository, or pass the files to check)",
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\rb", "a\\rb"),
        ("bell\x07", "bell\\x07"),
        ("esc\x1b[31m", "esc\\x1b[31m"),
        ("sep\u2028x", "sep\\u2028x"),
        ("c1\x85", "c1\\x85"),
        ("tab\tok", "tab\tok"),
        ("##[error]x", "##\\[error]x"),
    ],
)
def test_one_line_escapes_controls_and_legacy_commands(value: str, shown: str) -> None:
    assert safetext.one_line(value) == shown


@pytest.mark.parametrize("line", ["::error::x", "  ::warning::y", "\t::stop-commands::t"])
def test_plain_line_is_never_a_command(line: str) -> None:
    out = safetext.plain_line(line)
    assert parse_v2(out) is None
    assert out.replace("\\", "", 1) == line


def test_annotation_escapes_every_value() -> None:
    line = safetext.annotation("error", "50%\r\n::x", {"file": "a,b:c%\n", "title": "T"})
    assert line == "::error file=a%2Cb%3Ac%25%0A,title=T::50%25%0D%0A::x"
    assert parse_v2(line) == ("error", {"file": "a,b:c%\n", "title": "T"}, "50%\r\n::x")


def test_error_lines_text_keeps_one_error_per_line() -> None:
    lines = safetext.error_lines("text", "bad", path=FORGED, hint="h\n::x::y")
    assert lines == ["campaign: error: x\\n::error::forged: bad", "  hint: h", "  \\::x::y"]
    assert all(parse_v2(line) is None for line in lines)


def test_file_names_with_newlines_are_possible_here(tmp_path: Path) -> None:
    # The fixture needs them; a filesystem that refuses them would make the tests above vacuous.
    target = tmp_path / FORGED
    target.write_text("x")
    assert [p.name for p in tmp_path.iterdir()] == [FORGED]


# A log is the task's own text (a rented box's, too): title setting, screen clearing, a CSI in
# its 8-bit form and a workflow command, each of which a terminal or a CI runner would act on.
HOSTILE_LOG = (
    "\x1b]0;owned\x07title set\n"
    "\x1b[2J\x1b[Hscreen cleared\n"
    "\x9b31mC1 CSI\n"
    "::error::forged annotation\n"
    "Traceback (most recent call last):\n"
    "RuntimeError: CUDA out of memory. ##[error]legacy command\n"
)


def inert(text: str) -> None:
    """No terminal control and no workflow command survives in ``text``."""
    for line in text.splitlines():
        assert not any(ord(c) < 0x20 and c != "\t" for c in line), repr(line)
        assert not any(0x7F <= ord(c) <= 0x9F for c in line), repr(line)
        assert parse_v2(line) is None, line
        assert "##[" not in line, line


@pytest.mark.parametrize("last", ["RuntimeError: CUDA out of memory.", "\x1b[2Jno entry knows"])
def test_diagnose_shows_a_hostile_log_without_its_escapes(campaign: Path, last: str) -> None:
    log = campaign / "task.out"
    log.write_text(HOSTILE_LOG + f"\x1b]0;owned\x07{last} ##[error]x\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "campaignops",
            "diagnose",
            "--log",
            str(log),
            "--state",
            "FAILED",
            "--exit-code",
            "1",
        ],
        cwd=campaign,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    inert(proc.stdout)
    assert "line 7:" in proc.stdout  # the decisive line is shown, escaped
