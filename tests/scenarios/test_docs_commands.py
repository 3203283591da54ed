"""Every command block of README.md and the user guide runs as written (issue 20).

Each ```sh block of a page is read line by line and each line run, in order, in one fresh
directory per page, the way a new user types them: a `cd` carries to the next line. A non-zero
exit fails the test unless the line's own comment announces it (`# exits 1: …`); an announced
exit that does not happen fails it too. Blocks marked `text` (output, a variant for another
machine) are not commands. The few set-up lines that make the environment this test already
runs in (installing campaignops, the demo, the test command itself) are not run again: SET_UP
says where each is covered, and any other line runs.

The shell has this interpreter's scripts (campaign, pre-commit) first on PATH, as after the
README's `pip install '.[new]'` in a virtualenv, a HOME whose git knows a name and e-mail, and no
package index: the hooks pre-commit would download on first use are skipped with the SKIP the
guide gives for such a machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/guide.md")
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
RUN_INFO = {"sh", "bash", "shell"}
# A command's trailing comment may announce its exit: "# exits 1: smoke_first …".
ANNOUNCED = re.compile(r"#.*\bexits? (\d+)\b")
OFFLINE_SKIP = "shellcheck,check-github-workflows,check-gitlab-ci"

SET_UP = {
    "pip install '.[new]'": "this test's environment is that install (pip install -e '.[test]' "
    "includes [new]); tests/scenarios/test_first_contact.py builds a campaign with no index",
    "bash dev/demo.sh": "tests/scenarios/test_first_contact.py::test_the_demo_leaves_a_clean_campaign",
    "bash dev/test.sh": "the test command runs this test",
}


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str  # as written, comment included
    expect: int

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _bare(text: str) -> str:
    """The command without its trailing comment (a `#` after a space, outside quotes enough for
    the lines the docs hold)."""
    return re.split(r"\s+#\s", text, maxsplit=1)[0].strip()


def commands(page: str) -> list[Command]:
    text = (ROOT / page).read_text(encoding="utf-8")
    found: list[Command] = []
    for block in FENCE.finditer(text):
        info = block["info"].strip().split(" ", 1)[0]
        assert info, f"{page}: a code block without a language: mark it sh (run) or text"
        if info not in RUN_INFO:
            continue
        first = text.count("\n", 0, block.start("body")) + 1
        for offset, raw in enumerate(block["body"].splitlines()):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            assert not line.endswith("\\"), f"{page}:{first + offset}: one command per line"
            announced = ANNOUNCED.search(line)
            found.append(Command(page, first + offset, line, int(announced[1]) if announced else 0))
    return found


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = New User\n\temail = new.user@example.org\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n",
        encoding="utf-8",
    )
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {
        **env,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "PIP_NO_INDEX": "1",
        "SKIP": OFFLINE_SKIP,
    }


def _run(command: Command, cwd: Path, env: dict[str, str], pwd: Path) -> tuple[int, str, Path]:
    """Run one line in bash from ``cwd``; its exit, its output, and the directory it ended in."""
    script = f"{command.text}\n__rc=$?\npwd > {str(pwd)!r}\nexit $__rc\n"
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    return proc.returncode, proc.stdout, Path(pwd.read_text(encoding="utf-8").strip())


@pytest.mark.parametrize("page", PAGES)
def test_every_command_block_runs_as_written(page: str, tmp_path: Path) -> None:
    env = _env(tmp_path)
    cwd = tmp_path / "work"
    cwd.mkdir()
    ran: list[str] = []
    listed = commands(page)
    assert any(c.text.startswith("campaign new") for c in listed), f"{page}: no campaign new"
    for command in listed:
        if _bare(command.text) in SET_UP:
            continue
        code, out, cwd = _run(command, cwd, env, tmp_path / "pwd")
        ran.append(command.where)
        assert code == command.expect, (
            f"{command.where}: {command.text!r} exited {code}, the text says "
            f"{command.expect}:\n{out}"
        )
    assert len(ran) >= 5, ran


def test_the_set_up_lines_are_the_readme_s() -> None:
    """SET_UP names only lines the README holds: a renamed set-up command runs again."""
    bare = {_bare(c.text) for c in commands("README.md")}
    assert set(SET_UP) <= bare, sorted(set(SET_UP) - bare)


def test_an_unannounced_failure_or_a_false_announcement_is_caught(tmp_path: Path) -> None:
    """The reader itself: what the docs announce is what is expected."""
    page = tmp_path / "page.md"
    page.write_text(
        "```sh\nfalse   # exits 1: shown failing\ntrue\n```\n```text\nnot run\n```\n",
        encoding="utf-8",
    )
    rel = os.path.relpath(page, ROOT)
    assert [(c.text.split()[0], c.expect) for c in commands(rel)] == [("false", 1), ("true", 0)]
