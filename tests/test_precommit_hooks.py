""".pre-commit-hooks.yaml: agreement with the check families, and real pre-commit runs.

The real runs drive the installed pre-commit in temporary git repositories. pre-commit builds a
virtualenv and pip-installs campaignops from a hook repository, so the hook repository is a copy of
this checkout's working tree, committed in a temp repo: `try-repo` on the checkout itself would use
HEAD plus changes to *tracked* files only (untracked modules would be missing from the install).
Every run shares one PRE_COMMIT_HOME and one hook repository for the whole test run (all
workers), so the hook environment is built once:
the try-repo cases run what `try-repo` runs (a config naming the hook repository at its commit)
rather than `try-repo` itself, whose store is a throwaway directory per call.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from campaignops.checks.registry import FAMILIES
from tests.conftest import FIXTURES, git, made_once

ROOT = Path(__file__).resolve().parents[1]
HOOKS_FILE = ROOT / ".pre-commit-hooks.yaml"
# What a pip install of the hook repository needs; `schemas` is a symlink into the package.
HOOK_REPO_ITEMS = (
    "src",
    "pyproject.toml",
    "README.md",
    ".pre-commit-hooks.yaml",
    "schemas",
    "copier.yml",
    "template",
)
TIMEOUT = 300  # a cold virtualenv build downloads from PyPI

CRLF_SCRIPT = b"#!/usr/bin/env bash\r\nset -euo pipefail\r\necho prepare\r\n"
LF_SCRIPT = CRLF_SCRIPT.replace(b"\r\n", b"\n")
DUP_MANIFEST = "jobs:\n  - id: a\n  - id: b\n  - id: a\ndefault_cmd: python3 run.py\n"  # the second `a`: line 4
FINDING = re.compile(r"^(?P<path>\S+?):(?P<line>\d+):(?P<col>\d+): (?P<id>[A-Z]+\d{3}) ", re.M)
# Only stamp dates: a YYYY-MM not part of a longer date.
STAMP_DATE = re.compile(r"(?<![\d-])\d{4}-\d{2}(?![\d-])")


def _manifest() -> list[dict[str, Any]]:
    data = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    assert isinstance(data, list), f"{HOOKS_FILE} must be a list of hooks"
    return data


def _hooks() -> dict[str, dict[str, Any]]:
    return {str(h["id"]): h for h in _manifest()}


# --- agreement between the hook manifest, the registry and the README ---------------------------


def test_hook_ids_are_campaign_check_plus_one_per_family() -> None:
    ids = [str(h["id"]) for h in _manifest()]
    assert len(ids) == len(set(ids)), f"duplicate hook ids: {ids}"
    assert set(ids) == {"campaign-check"} | {f"campaign-{fam.lower()}" for fam in FAMILIES}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_hook_runs_its_family(family: str) -> None:
    hook = _hooks()[f"campaign-{family.lower()}"]
    assert hook["entry"] == f"campaign check --select {family}"


def test_campaign_check_hook_runs_everything_on_the_whole_campaign() -> None:
    hook = _hooks()["campaign-check"]
    assert hook["entry"] == "campaign check"
    assert hook["pass_filenames"] is False


def test_every_hook_is_a_python_hook() -> None:
    hooks = _hooks()
    assert {hid: h.get("language") for hid, h in hooks.items()} == dict.fromkeys(hooks, "python")


def test_file_patterns_reach_the_clean_campaign() -> None:
    # A `files` regex with a typo makes its hook "Skipped" forever; pre-commit uses re.search.
    clean = FIXTURES / "clean"
    tracked = [p.relative_to(clean).as_posix() for p in clean.rglob("*") if p.is_file()]
    for hid, hook in _hooks().items():
        if "files" in hook:
            pattern = re.compile(hook["files"])
            assert any(pattern.search(p) for p in tracked), (
                f"{hid}: {hook['files']} matches nothing"
            )


def test_pre_commit_accepts_the_manifest() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(HOOKS_FILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_reference_mentions_every_hook_id() -> None:
    # The README's reference material, "Pre-commit hooks" included, is docs/reference.md.
    readme = (ROOT / "docs/reference.md").read_text(encoding="utf-8")
    missing = [
        hid for hid in _hooks() if not re.search(rf"(?<![\w-]){re.escape(hid)}(?![\w-])", readme)
    ]
    assert not missing, f"docs/reference.md does not mention hooks {missing}"


# --- real pre-commit --------------------------------------------------------------------------


@dataclass(frozen=True)
class HookRepo:
    path: Path
    rev: str


@dataclass(frozen=True)
class PreCommit:
    argv: tuple[str, ...]
    code: int
    out: str

    def findings(self) -> list[tuple[str, int, str]]:
        return sorted((m["path"], int(m["line"]), m["id"]) for m in FINDING.finditer(self.out))

    def status(self, hook_id: str) -> str:
        """Passed, Failed or Skipped: the result line pre-commit printed for ``hook_id``."""
        name = re.escape(str(_hooks()[hook_id]["name"]))
        found = re.search(rf"^{name}\.*(?:\(no files to check\))?(\w+)$", self.out, re.M)
        assert found, f"no result line for {hook_id}\n{self.log}"
        return found[1]

    @property
    def log(self) -> str:
        """The command and pre-commit's whole output, for assertion messages."""
        return f"$ {' '.join(self.argv)}\nexit {self.code}\n{self.out}"


def _commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    """This checkout's working tree, committed in a temp repo: a pre-commit hook repository,
    one for the whole run (its path and commit name the hook environment pre-commit builds)."""

    def snapshot(dest: Path) -> None:
        for name in HOOK_REPO_ITEMS:
            src = ROOT / name
            if src.is_symlink():
                (dest / name).symlink_to(src.readlink())
            elif src.is_dir():
                ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*_cache")
                shutil.copytree(src, dest / name, ignore=ignore)
            else:
                shutil.copy2(src, dest / name)
        git(dest, "init", "-q")
        _commit_all(dest, "hook repository snapshot")

    dest = made_once(tmp_path_factory, "pre-commit hook repository", snapshot)
    return HookRepo(path=dest, rev=git(dest, "rev-parse", "HEAD").strip())


@pytest.fixture(scope="session")
def pc_env(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, str]:
    # Outer git or pre-commit state (running inside a hook, SKIP=…) must not leak into the runs.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.pop("SKIP", None)
    ident = {"NAME": "Test", "EMAIL": "test@example.org"}
    env.update({f"GIT_{who}_{k}": v for who in ("AUTHOR", "COMMITTER") for k, v in ident.items()})
    # One store for the run, shared by the workers (pre-commit locks it while it installs).
    env["PRE_COMMIT_HOME"] = str(made_once(tmp_path_factory, "PRE_COMMIT_HOME", lambda _: None))
    return env


def _freshen_stamps(root: Path) -> None:
    # The hooks age stamps against the real date (no --today), so the fixture's stamps are moved
    # to this month: neither stale nor in the future, whenever the suite runs. Views show stamps,
    # so they are re-rendered from the edited sources, as a user would.
    month = dt.date.today().strftime("%Y-%m")
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in {".md", ".yaml", ".yml"}:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            fresh = [STAMP_DATE.sub(month, ln) if "verified" in ln else ln for ln in lines]
            path.write_text("".join(fresh), encoding="utf-8")
    render = subprocess.run(
        [sys.executable, "-m", "campaignops", "render"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert render.returncode == 0, render.stdout + render.stderr


@pytest.fixture
def committed_campaign(tmp_path: Path) -> Path:
    """The clean fixture campaign with current stamps, as a git repository with one commit."""
    root = tmp_path / "campaign"
    shutil.copytree(FIXTURES / "clean", root, symlinks=True)
    _freshen_stamps(root)
    git(root, "init", "-q")
    _commit_all(root, "clean campaign")
    return root


def _pre_commit(*args: str, cwd: Path, env: Mapping[str, str]) -> PreCommit:
    argv = (sys.executable, "-m", "pre_commit", *args)
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    return PreCommit(argv=argv[1:], code=proc.returncode, out=proc.stdout)


def _try_repo(
    hooks: HookRepo, hook_id: str, *args: str, cwd: Path, env: Mapping[str, str]
) -> PreCommit:
    """What `pre-commit try-repo REPO HOOK` does (a config naming the repository at its commit
    and the one hook, outside the campaign, then `run`), but in the session's PRE_COMMIT_HOME:
    try-repo's own store is a fresh temp directory, which rebuilt the hook environment (a
    virtualenv and a pip install of campaignops) for every call."""
    config = cwd.parent / f"try-{hook_id}.yaml"
    config.write_text(
        f"repos:\n  - repo: {hooks.path}\n    rev: {hooks.rev}\n    hooks:\n"
        f"      - id: {hook_id}\n",
        encoding="utf-8",
    )
    return _pre_commit(
        "run", "--config", str(config), hook_id, "--color=never", *args, cwd=cwd, env=env
    )


def _use_hooks(root: Path, hooks: HookRepo, *entries: str) -> None:
    """A real .pre-commit-config.yaml pinning the hook repository at its commit."""
    config = f"repos:\n  - repo: {hooks.path}\n    rev: {hooks.rev}\n    hooks:\n"
    (root / ".pre-commit-config.yaml").write_text(config + "".join(entries), encoding="utf-8")
    _commit_all(root, "use the campaignops hooks")


def _run_all(root: Path, env: Mapping[str, str]) -> PreCommit:
    return _pre_commit("run", "--all-files", "--color=never", cwd=root, env=env)


DEFECTS = {
    "campaign-eol": (
        "scripts/prepare.v1.sh",
        CRLF_SCRIPT,
        "scripts/run_one.v1.sh",
        [("scripts/prepare.v1.sh", 1, "EOL001")],
    ),
    "campaign-man": (
        "manifests/dup.yaml",
        DUP_MANIFEST.encode(),
        "manifests/smoke.yaml",
        [("manifests/dup.yaml", 4, "MAN002")],
    ),
}


@pytest.mark.parametrize("hook_id", list(DEFECTS))
def test_try_repo_reports_the_planted_defect(
    hook_id: str, hook_repo: HookRepo, pc_env: Mapping[str, str], committed_campaign: Path
) -> None:
    rel, content, clean_rel, expected = DEFECTS[hook_id]
    (committed_campaign / rel).write_bytes(content)
    git(committed_campaign, "add", rel)  # staged, as in a commit being made
    run = _try_repo(
        hook_repo, hook_id, "--files", rel, clean_rel, cwd=committed_campaign, env=pc_env
    )
    assert run.code == 1, run.log
    assert run.status(hook_id) == "Failed", run.log
    assert run.findings() == expected, run.log
    assert (committed_campaign / rel).read_bytes() == content, "changed without --fix"


@pytest.mark.parametrize(
    ("hook_id", "args"),
    [("campaign-eol", ("--all-files",)), ("campaign-man", ("--files", "manifests/smoke.yaml"))],
)
def test_try_repo_passes_the_clean_campaign(
    hook_id: str,
    args: tuple[str, ...],
    hook_repo: HookRepo,
    pc_env: Mapping[str, str],
    committed_campaign: Path,
) -> None:
    run = _try_repo(hook_repo, hook_id, *args, cwd=committed_campaign, env=pc_env)
    assert run.code == 0, run.log
    assert run.status(hook_id) == "Passed", run.log  # not "Skipped": the hook saw files
    assert run.findings() == [], run.log


def test_eol_hook_with_fix_rewrites_then_passes(
    hook_repo: HookRepo, pc_env: Mapping[str, str], committed_campaign: Path
) -> None:
    script = committed_campaign / "scripts" / "prepare.v1.sh"
    script.write_bytes(CRLF_SCRIPT)
    _use_hooks(committed_campaign, hook_repo, "      - id: campaign-eol\n        args: [--fix]\n")
    # The fixture's .gitattributes (eol=lf) normalizes the index, so pre-commit sees no diff; the
    # run fails because the EOL check still reports what it fixed.
    first = _run_all(committed_campaign, pc_env)
    assert first.code == 1, first.log
    assert first.status("campaign-eol") == "Failed", first.log
    assert first.findings() == [("scripts/prepare.v1.sh", 1, "EOL001")], first.log
    assert script.read_bytes() == LF_SCRIPT, first.log
    second = _run_all(committed_campaign, pc_env)
    assert second.code == 0, second.log
    assert second.status("campaign-eol") == "Passed", second.log
    assert script.read_bytes() == LF_SCRIPT


def test_campaign_check_hook_checks_the_whole_campaign(
    hook_repo: HookRepo, pc_env: Mapping[str, str], committed_campaign: Path
) -> None:
    _use_hooks(committed_campaign, hook_repo, "      - id: campaign-check\n")
    clean = _run_all(committed_campaign, pc_env)
    assert clean.code == 0, clean.log
    assert clean.status("campaign-check") == "Passed", clean.log
    # Untracked, so pre-commit never passes them: found only because the hook discovers files.
    (committed_campaign / "manifests" / "dup.yaml").write_text(DUP_MANIFEST, encoding="utf-8")
    (committed_campaign / "scripts" / "prepare.v1.sh").write_bytes(CRLF_SCRIPT)
    dirty = _run_all(committed_campaign, pc_env)
    assert dirty.code == 1, dirty.log
    assert dirty.status("campaign-check") == "Failed", dirty.log
    assert dirty.findings() == [
        ("manifests/dup.yaml", 4, "MAN002"),
        ("scripts/prepare.v1.sh", 1, "EOL001"),
    ], dirty.log
