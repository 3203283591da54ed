"""First contact: what a new user types, as written, on a fresh campaign (issue 20).

`campaign new --defaults` prints its "Next:" commands; each must pass when run exactly as
printed, in order, in a shell.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import git

STAMP_DATE = re.compile(r"(?<![\d-])\d{4}-\d{2}(?![\d-])")


def _shell_env(tmp_path: Path) -> dict[str, str]:
    """This interpreter's scripts (campaign, pre-commit) first on PATH, as after the README's
    `pip install '.[new]'` in a virtualenv."""
    bindir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
    }


def _freshen_stamps(root: Path) -> None:
    # `campaign check` ages the template's "verified" stamps against the real date: move them to
    # this month and commit (as dev/demo.sh does), so the test tests the path, not the calendar.
    month = dt.date.today().strftime("%Y-%m")
    for path in root.rglob("*"):
        if ".git" in path.parts or not path.is_file() or path.suffix not in {".md", ".yaml"}:
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        fresh = [STAMP_DATE.sub(month, ln) if "verified" in ln else ln for ln in lines]
        path.write_text("".join(fresh), encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "campaignops", "render"], cwd=root, check=True, capture_output=True
    )
    git(root, "commit", "-qam", "Re-verify stamps", "--allow-empty")


def test_every_next_command_of_campaign_new_passes_as_written(tmp_path: Path) -> None:
    env = _shell_env(tmp_path)
    made = subprocess.run(
        [sys.executable, "-m", "campaignops", "new", "fresh", "--defaults"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    steps = [ln.strip() for ln in made.stdout.split("Next:\n", 1)[1].splitlines() if ln.strip()]
    assert steps[0] == "cd fresh" and any("--dry-run" in s for s in steps), made.stdout
    _freshen_stamps(tmp_path / "fresh")
    done: list[str] = []
    for step in steps:
        # One shell for all of them, as a user types them: a `cd` carries to the next step.
        script = " && ".join([*done, step])
        proc = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, (
            f"{step!r} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
        )
        if step.startswith("cd "):
            done.append(step)


DEMO = Path(__file__).resolve().parents[2] / "dev" / "demo.sh"


def test_the_demo_leaves_a_clean_campaign(tmp_path: Path) -> None:
    """dev/demo.sh plants a CRLF script and a duplicate target to show `campaign check` catching
    them; it removes them again, so the campaign it leaves checks clean and opens production."""
    env = {**_shell_env(tmp_path), "CAMPAIGNOPS_DEMO_INSTALLED": "1"}
    root = tmp_path / "demo-campaign"
    demo = subprocess.run(
        ["bash", str(DEMO), str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert not (root / "manifests/dup.yaml").exists()
    assert not (root / "scripts/hello.v1.sh").exists()
    assert git(root, "diff", "--cached", "--name-only") == ""

    def campaign(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "campaignops", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    check = campaign("check")
    assert check.returncode == 0, check.stdout + check.stderr
    production = campaign("submit", "manifests/example.yaml", "--stage", "production", "--dry-run")
    assert production.returncode == 0, production.stdout + production.stderr


def test_the_campaign_hook_works_offline_before_any_release(tmp_path: Path) -> None:
    """`pip install '.[new]'`, `campaign new`, `pre-commit install`, with no package index that
    serves campaignops (none at all here): a CRLF script is stopped by the campaign-check hook
    and a clean commit passes. The pinned third-party hooks (shellcheck, check-jsonschema) are
    downloaded once on first use; they are skipped here, where nothing can be downloaded."""
    env = {
        **_shell_env(tmp_path),
        "PIP_NO_INDEX": "1",
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_FIND_LINKS": "",
        "SKIP": "shellcheck,check-github-workflows,check-gitlab-ci",
    }
    env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
    made = subprocess.run(
        [sys.executable, "-m", "campaignops", "new", "hooked", "--defaults"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    root = tmp_path / "hooked"

    def shell(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", script],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
            check=False,
        )

    assert shell("pre-commit install").returncode == 0
    ident = "git -c user.name=T -c user.email=t@example.org -c commit.gpgsign=false"
    head = git(root, "rev-parse", "HEAD")
    (root / "scripts/hello.v1.sh").write_bytes(b"#!/usr/bin/env bash\r\necho hi\r\n")
    stopped = shell(f"git add -A && {ident} commit -m 'a CRLF script'")
    assert stopped.returncode == 1, stopped.stdout
    assert re.search(r"campaign check \(all families\)\.+Failed", stopped.stdout), stopped.stdout
    assert "scripts/hello.v1.sh" in stopped.stdout and "EOL001" in stopped.stdout
    assert git(root, "rev-parse", "HEAD") == head
    (root / "scripts/hello.v1.sh").write_bytes(b"#!/usr/bin/env bash\necho hi\n")
    passed = shell(f"git add -A && {ident} commit -m 'an LF script'")
    assert passed.returncode == 0, passed.stdout
    assert re.search(r"campaign check \(all families\)\.+Passed", passed.stdout), passed.stdout
