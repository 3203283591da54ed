"""Every generated campaign passes its own checks, as a new user would run them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from campaignops.core import yamldoc
from campaignops.model import manifest
from tests.conftest import git
from tests.template.conftest import MATRIX, PLACEHOLDER_PAGES, ROOT, copy_tree

BIN = Path(sys.executable).parent


def run(cmd: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_", "SKIP"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def test_template_views_are_up_to_date() -> None:
    proc = run([sys.executable, "dev/template_views.py", "--check"], cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_campaign_check_passes(rendered, row: int) -> None:  # type: ignore[no-untyped-def]
    root = rendered[row][0]
    proc = run([sys.executable, "-m", "campaignops", "check", "--format", "json"], cwd=root)
    found = json.loads(proc.stdout)["findings"]
    chosen = MATRIX[row]["backends"].split(",")
    expected_pages = {f"backends/{p}.md" for p in PLACEHOLDER_PAGES if p in chosen}
    # The only findings are the site facts the user must fill in on the generic pages.
    assert {f["path"] for f in found} == expected_pages, proc.stdout
    assert {f["id"] for f in found} <= {"STALE002"}
    assert proc.returncode == (1 if expected_pages else 0), proc.stderr


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_shellcheck_passes_on_the_scripts(rendered, row: int) -> None:  # type: ignore[no-untyped-def]
    scripts = sorted(str(p) for p in (rendered[row][0] / "scripts").glob("*.sh"))
    assert scripts
    proc = run(["shellcheck", *scripts], cwd=rendered[row][0])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_workflows_valid_against_vendored_schemas(rendered, row: int) -> None:  # type: ignore[no-untyped-def]
    root = rendered[row][0]
    checks = {
        ".github/workflows/checks.yml": "vendor.github-workflows",
        ".gitlab-ci.yml": "vendor.gitlab-ci",
    }
    present = {rel: s for rel, s in checks.items() if (root / rel).is_file()}
    assert bool(present) == (MATRIX[row]["ci"] != "none")
    for rel, builtin in present.items():
        proc = run(["check-jsonschema", "--builtin-schema", builtin, rel], cwd=root)
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_pre_commit_run_all_files(
    rendered, row: int, tmp_path: Path, pre_commit_home: Path
) -> None:  # type: ignore[no-untyped-def]
    root = copy_tree(rendered[row][0], tmp_path / "campaign")
    git(root, "init", "-q")
    git(root, "add", "-A")
    env_home = {"PRE_COMMIT_HOME": str(pre_commit_home)}

    def pre_commit(*args: str) -> tuple[int, str]:
        proc = subprocess.run(
            [str(BIN / "pre-commit"), "run", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=900,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SKIP"))},
                "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
                **env_home,
            },
        )
        return proc.returncode, proc.stdout + proc.stderr

    # The first commit (copier copy, git init, pre-commit install, commit): no HEAD yet, so
    # the hook's `campaign check --base HEAD` checks everything.
    code, out = pre_commit()
    chosen = MATRIX[row]["backends"].split(",")
    if any(p in chosen for p in PLACEHOLDER_PAGES):
        # Only campaign check fails, and only on the placeholders the user must fill in.
        assert code == 1, out
        assert "campaign check (all families)" in out and "STALE002" in out
        assert out.count("Failed") == 1, out
    else:
        assert code == 0, out
    assert "shellcheck" in out and "Passed" in out
    # Later commits are judged on what they touch: the untouched placeholders are the scheduled
    # audit's to report, not every commit's.
    git(root, "commit", "-q", "--no-verify", "-m", "new campaign")
    code, out = pre_commit("--all-files")
    assert code == 0, out


def test_example_smoke_runs_and_writes_its_output(rendered, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = copy_tree(rendered[0][0], tmp_path / "campaign")
    doc = yamldoc.load((root / "manifests/example.yaml").read_text(), path="example.yaml")
    smoke_args = doc["smoke"]["args"]
    first = next(manifest.targets(doc))
    assert first.cmd and first.output
    # The runner appends each arg as --key value, smoke values replacing run-length ones.
    args = {**first.args, **smoke_args}
    argv = shlex.split(first.cmd) + [x for k, v in args.items() for x in (f"--{k}", str(v))]
    proc = run(argv, cwd=root, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    metrics = json.loads((root / first.output).read_text())
    assert metrics  # written atomically at completion
