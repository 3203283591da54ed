"""repo_facts on real git repositories, and the committed gate's refusals of content git status
does not show: a symlink out of the repository, index bits, ignored or excluded files."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from campaignops.core import gitcli, yamldoc
from campaignops.core.route import Route, route
from campaignops.model.policy import Policy, from_data
from campaignops.runner import gitfacts
from campaignops.runner.committed import committed
from campaignops.runner.gitfacts import ASSUME_UNCHANGED, SKIP_WORKTREE, blob_id
from tests.conftest import git

MANIFEST = "manifests/smoke.yaml"
PATHS = (MANIFEST, "campaign.yaml", "scripts/run_one.v1.sh", "configs/baseline.yaml")


def policy_of(root: Path) -> Policy:
    data = yamldoc.load((root / "campaign.yaml").read_text(), path="campaign.yaml")
    return dataclasses.replace(from_data(data), require_pushed=False)


def verdict(root: Path, paths: Sequence[str] = PATHS):  # type: ignore[no-untyped-def]
    return committed(gitfacts.repo_facts(root, paths), paths=paths, policy=policy_of(root))


def status(root: Path) -> str:
    return git(root, "status", "--porcelain")


def test_blob_id_is_gits_own(tmp_path: Path) -> None:
    data = b"lr: 0.1\n\x00binary\n"
    (tmp_path / "f").write_bytes(data)
    want = subprocess.run(
        ["git", "hash-object", "f"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert blob_id(data, sha256=False) == want
    assert len(blob_id(data, sha256=True)) == 64


def test_route_follows_links_inside_and_stops_at_the_way_out(tmp_path: Path) -> None:
    top = tmp_path / "top"
    (top / "shared").mkdir(parents=True)
    (top / "shared" / "a.yaml").write_text("a\n")
    (top / "camp").mkdir()
    (top / "camp" / "a.yaml").symlink_to("../shared/a.yaml")
    (top / "camp" / "cfg").symlink_to("../shared")
    (top / "camp" / "abs.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    (top / "camp" / "up.yaml").symlink_to("../../elsewhere.yaml")
    (top / "camp" / "loop").symlink_to("loop")
    assert route(top, "camp/plain.yaml") == Route(real="camp/plain.yaml")
    assert route(top, "camp/a.yaml") == Route(links=("camp/a.yaml",), real="shared/a.yaml")
    assert route(top, "camp/cfg/a.yaml") == Route(links=("camp/cfg",), real="shared/a.yaml")
    assert route(top, "camp/abs.yaml").escape == str(tmp_path / "elsewhere.yaml")
    assert route(top, "camp/up.yaml") == Route(
        links=("camp/up.yaml",), escape="../../elsewhere.yaml"
    )
    assert route(top, "camp/loop").escape == "loop"


def test_a_clean_repository_holds_every_path(repo: Path) -> None:
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.tracked == set(PATHS)
    assert (facts.dirty, facts.flagged, facts.outside, facts.rules) == (set(), {}, {}, {})
    assert verdict(repo).passed


def test_skip_worktree_hides_an_edit_from_status_not_from_the_gate(repo: Path) -> None:
    (repo / MANIFEST).write_text((repo / MANIFEST).read_text() + "# edited after commit\n")
    git(repo, "update-index", "--skip-worktree", MANIFEST)
    assert status(repo) == ""  # what the gate used to trust
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.flagged == {MANIFEST: SKIP_WORKTREE}
    assert MANIFEST in facts.dirty  # the bytes differ from HEAD's blob
    refused = verdict(repo)
    assert not refused.passed
    assert refused.reason == (
        "git status cannot see changes to manifests/smoke.yaml (skip-worktree): "
        "its index entry says so"
    )
    assert refused.hint.startswith("git update-index --no-skip-worktree manifests/smoke.yaml, ")


def test_assume_unchanged_is_refused_even_on_a_file_the_job_does_not_name(repo: Path) -> None:
    (repo / "configs" / "no_aug.yaml").write_text("aug: true\n")
    git(repo, "update-index", "--assume-unchanged", "configs/no_aug.yaml", MANIFEST)
    assert status(repo) == ""
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.flagged == {
        "configs/no_aug.yaml": ASSUME_UNCHANGED,
        MANIFEST: ASSUME_UNCHANGED,
    }
    refused = verdict(repo)
    assert not refused.passed
    assert "configs/no_aug.yaml (assume-unchanged), manifests/smoke.yaml" in refused.reason
    assert refused.hint.startswith(
        "git update-index --no-assume-unchanged configs/no_aug.yaml manifests/smoke.yaml"
    )


def test_a_sparse_checkouts_absent_file_hides_nothing(repo: Path) -> None:
    git(repo, "update-index", "--skip-worktree", "configs/no_aug.yaml")
    (repo / "configs" / "no_aug.yaml").unlink()
    assert gitfacts.repo_facts(repo, PATHS).flagged == {}
    assert verdict(repo).passed


def test_a_manifest_committed_as_a_symlink_out_of_the_repository(
    repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text((repo / MANIFEST).read_text())
    (repo / MANIFEST).unlink()
    (repo / MANIFEST).symlink_to(elsewhere)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "manifest kept elsewhere")
    elsewhere.write_text(elsewhere.read_text() + "# edited where git never looks\n")
    assert status(repo) == ""
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.outside == {MANIFEST: (MANIFEST, str(elsewhere))}
    refused = verdict(repo)
    assert not refused.passed
    assert refused.reason == (
        f"symlink leading out of the repository: {MANIFEST} -> {elsewhere}; "
        "what it reads is in no commit"
    )
    assert "replace the symlink with a copy of what it points to" in refused.hint


def test_a_relative_symlink_climbing_out_is_refused_too(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho outside\n")
    (repo / "scripts" / "run_one.v1.sh").unlink()
    (repo / "scripts" / "run_one.v1.sh").symlink_to("../../run.sh")
    git(repo, "commit", "-qam", "wrapper kept elsewhere")
    wrapper = "scripts/run_one.v1.sh"
    assert gitfacts.repo_facts(repo, PATHS).outside == {wrapper: (wrapper, "../../run.sh")}
    refused = verdict(repo)
    assert refused.reason.startswith(f"symlink leading out of the repository: {wrapper} -> ")
    # What the hint says works.
    fix = refused.hint.split("(", 1)[1].split(")", 1)[0]
    subprocess.run(fix, shell=True, cwd=repo, check=True)
    assert not (repo / wrapper).is_symlink()
    git(repo, "add", wrapper)
    git(repo, "commit", "-qm", "the wrapper itself")
    assert verdict(repo).passed


def test_a_directory_symlink_out_of_the_repository_is_named_with_the_path(
    repo: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-configs"
    shared.mkdir()
    (shared / "big.yaml").write_text("lr: 1\n")
    (repo / "configs" / "shared").symlink_to(shared)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "configs kept outside")
    paths = (*PATHS, "configs/shared/big.yaml")
    facts = gitfacts.repo_facts(repo, paths)
    assert facts.outside == {"configs/shared/big.yaml": ("configs/shared", str(shared))}
    refused = verdict(repo, paths)
    assert refused.reason == (
        "symlink leading out of the repository: configs/shared/big.yaml (through "
        f"configs/shared -> {shared}); what it reads is in no commit"
    )
    assert "cp -RL configs/shared configs/shared.copy" in refused.hint


def test_a_symlink_inside_the_repository_compares_what_it_leads_to(repo: Path) -> None:
    (repo / "configs" / "current.yaml").symlink_to("baseline.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "current config")
    paths = (*PATHS, "configs/current.yaml")
    assert verdict(repo, paths).passed
    (repo / "configs" / "baseline.yaml").write_text("lr: 9\n")
    facts = gitfacts.repo_facts(repo, paths)
    assert {"configs/current.yaml", "configs/baseline.yaml"} <= facts.dirty
    # The link retargeted (same name, other file): its own blob differs from HEAD's.
    git(repo, "checkout", "-q", "--", "configs/baseline.yaml")
    (repo / "configs" / "current.yaml").unlink()
    (repo / "configs" / "current.yaml").symlink_to("no_aug.yaml")
    assert gitfacts.repo_facts(repo, ["configs/current.yaml"]).dirty == {"configs/current.yaml"}


def test_a_file_replaced_by_a_symlink_to_a_tracked_twin_is_a_change(repo: Path) -> None:
    (repo / "configs" / "no_aug.yaml").write_text((repo / "configs/baseline.yaml").read_text())
    git(repo, "commit", "-qam", "twins")
    (repo / "configs" / "no_aug.yaml").unlink()
    (repo / "configs" / "no_aug.yaml").symlink_to("baseline.yaml")
    assert "configs/no_aug.yaml" in gitfacts.repo_facts(repo, ["configs/no_aug.yaml"]).dirty


def test_an_ignored_config_is_refused_with_the_rule_that_hides_it(repo: Path) -> None:
    (repo / ".gitignore").write_text("runs/\n*.local.yaml\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore local configs")
    (repo / "configs" / "gpu.local.yaml").write_text("lr: 1\n")
    (repo / ".git" / "info" / "exclude").write_text("# mine\nconfigs/mine.yaml\n")
    (repo / "configs" / "mine.yaml").write_text("lr: 2\n")
    assert status(repo) == ""
    paths = (*PATHS, "configs/gpu.local.yaml", "configs/mine.yaml")
    facts = gitfacts.repo_facts(repo, paths)
    assert facts.rules == {
        "configs/gpu.local.yaml": ".gitignore:2: *.local.yaml",
        "configs/mine.yaml": ".git/info/exclude:2: configs/mine.yaml",
    }
    refused = verdict(repo, paths)
    assert not refused.passed
    assert refused.reason == (
        "ignored by git, so never committed: configs/gpu.local.yaml (.gitignore:2: "
        "*.local.yaml), configs/mine.yaml (.git/info/exclude:2: configs/mine.yaml)"
    )
    assert refused.hint.endswith(
        "then git add configs/gpu.local.yaml configs/mine.yaml && git commit"
    )


def test_an_untracked_config_named_by_the_command_is_not_committed(repo: Path) -> None:
    (repo / "configs" / "fresh.yaml").write_text("lr: 3\n")
    paths = (*PATHS, "configs/fresh.yaml")
    facts = gitfacts.repo_facts(repo, paths)
    assert "configs/fresh.yaml" not in facts.tracked and facts.rules == {}
    assert verdict(repo, paths).reason == "not committed: configs/fresh.yaml"


def test_a_negated_rule_does_not_count_as_ignored(repo: Path) -> None:
    (repo / ".gitignore").write_text("configs/*.yaml\n!configs/keep.yaml\n")
    (repo / "configs" / "keep.yaml").write_text("lr: 4\n")
    facts = gitfacts.repo_facts(repo, (*PATHS, "configs/keep.yaml"))
    assert facts.rules == {}


@pytest.mark.parametrize(
    ("rule", "hidden", "listed"),
    [
        ("scripts/helper.py", "scripts/helper.py", "scripts/helper.py"),
        ("*.py", "scripts/helper.py", "scripts/helper.py"),
        ("scripts/private/", "scripts/private/key.py", "scripts/private/"),
    ],
)
def test_an_excluded_file_under_scripts_is_refused(
    repo: Path, rule: str, hidden: str, listed: str
) -> None:
    (repo / ".git" / "info" / "exclude").write_text(rule + "\n")
    (repo / hidden).parent.mkdir(exist_ok=True)
    (repo / hidden).write_text("print('in no commit')\n")
    assert status(repo) == ""
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.ignored == {listed}
    refused = verdict(repo)
    assert not refused.passed
    assert refused.reason == (
        f"ignored or excluded under manifests/, queues/, scripts/: {listed} "
        "(a job may run them; git status does not show them)"
    )
    assert "drop the rule in .gitignore or .git/info/exclude" in refused.hint


def test_bytecode_caches_under_scripts_pass(repo: Path) -> None:
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore caches")
    (repo / "scripts" / "__pycache__").mkdir()
    (repo / "scripts" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"\x00")
    (repo / "scripts" / "old.pyc").write_bytes(b"\x00")
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.ignored == {"scripts/__pycache__/", "scripts/old.pyc"}
    assert verdict(repo).passed


def test_ignored_outputs_outside_the_watched_directories_pass(repo: Path) -> None:
    (repo / ".gitignore").write_text("runs/\n*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore outputs")
    (repo / "runs" / "a" / "b").mkdir(parents=True)
    (repo / "runs" / "a" / "b" / "metrics.json").write_text("{}\n")
    (repo / "train.log").write_text("loss 1\n")
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.ignored == {"runs/", "train.log"}  # a directory once, not its files
    assert verdict(repo).passed


def test_a_staged_but_uncommitted_file_is_not_in_head(repo: Path) -> None:
    (repo / "configs" / "staged.yaml").write_text("lr: 5\n")
    git(repo, "add", "configs/staged.yaml")
    paths = (*PATHS, "configs/staged.yaml")
    assert verdict(repo, paths).reason == "not committed: configs/staged.yaml"


def test_a_deleted_file_hidden_by_assume_unchanged(repo: Path) -> None:
    git(repo, "update-index", "--assume-unchanged", "configs/baseline.yaml")
    (repo / "configs" / "baseline.yaml").unlink()
    assert status(repo) == ""
    facts = gitfacts.repo_facts(repo, PATHS)
    assert "configs/baseline.yaml" in facts.dirty
    assert facts.flagged == {"configs/baseline.yaml": ASSUME_UNCHANGED}  # it hides the deletion
    assert "configs/baseline.yaml (assume-unchanged)" in verdict(repo).reason
    git(repo, "update-index", "--no-assume-unchanged", "configs/baseline.yaml")
    assert verdict(repo).reason == "configs/baseline.yaml has uncommitted changes"


def test_a_skip_worktree_bit_on_a_path_the_job_names_is_refused_even_when_absent(
    repo: Path,
) -> None:
    git(repo, "update-index", "--skip-worktree", "configs/no_aug.yaml")
    (repo / "configs" / "no_aug.yaml").unlink()
    paths = (*PATHS, "configs/no_aug.yaml")
    facts = gitfacts.repo_facts(repo, paths)
    assert facts.flagged == {"configs/no_aug.yaml": SKIP_WORKTREE}
    assert facts.converted == set()
    assert "configs/no_aug.yaml (skip-worktree)" in verdict(repo, paths).reason


def test_the_number_of_git_calls_does_not_grow_with_the_paths(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(300):
        (repo / "configs" / f"c{i}.yaml").write_text(f"lr: {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many configs")
    calls: list[Sequence[str]] = []
    real = subprocess.run

    def counting(argv: Sequence[str], **kwargs: Any) -> Any:
        calls.append(argv)
        return real(argv, **kwargs)

    monkeypatch.setattr(gitcli.subprocess, "run", counting)
    few = gitfacts.repo_facts(repo, PATHS)
    n_few = len(calls)
    many = (*PATHS, *(f"configs/c{i}.yaml" for i in range(300)), "configs/missing.yaml")
    facts = gitfacts.repo_facts(repo, many)
    assert len(few.tracked) == 4 and len(facts.tracked) == 304
    # The work tree's top, status, HEAD, ls-tree, ls-files, the branch, its remote (none here)
    # and the remotes; check-ignore only once a path is not in HEAD.
    assert n_few == 8 and len(calls) - n_few == 9
    assert [argv[-4:] for argv in calls].count(["check-ignore", "-v", "-z", "--stdin"]) == 1


def test_a_campaign_in_a_subdirectory_with_a_config_shared_above(tmp_path: Path) -> None:
    top = tmp_path / "mono"
    (top / "shared").mkdir(parents=True)
    (top / "shared" / "base.yaml").write_text("lr: 1\n")
    (top / "camp" / "configs").mkdir(parents=True)
    (top / "camp" / "configs" / "base.yaml").symlink_to("../../shared/base.yaml")
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "init")
    facts = gitfacts.repo_facts(top / "camp", ["configs/base.yaml"])
    assert facts.tracked == {"configs/base.yaml"} and facts.dirty == set()
    (top / "shared" / "base.yaml").write_text("lr: 2\n")
    git(top, "update-index", "--skip-worktree", "shared/base.yaml")
    facts = gitfacts.repo_facts(top / "camp", ["configs/base.yaml"])
    assert facts.dirty == {"configs/base.yaml"}
    assert facts.flagged == {"configs/base.yaml": SKIP_WORKTREE}


def test_a_crlf_file_git_status_calls_clean_is_refused_as_converted(repo: Path) -> None:
    """.gitattributes says eol=lf: git stores LF and, once the CRLF file is added, calls it
    clean; the job would still run the CRLF bytes ($'\\r': command not found)."""
    (repo / ".gitattributes").write_text("*.sh text eol=lf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "LF scripts")
    wrapper = repo / "scripts" / "run_one.v1.sh"
    wrapper.write_bytes(wrapper.read_bytes().replace(b"\n", b"\r\n"))
    git(repo, "add", "scripts/run_one.v1.sh")
    assert status(repo) == ""
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.converted == {"scripts/run_one.v1.sh"} <= facts.dirty
    assert facts.unseen == set()
    refused = verdict(repo)
    assert refused.reason == (
        "scripts/run_one.v1.sh differs from HEAD byte for byte, though git status calls it "
        "clean: git converts it on the way in (line endings, a clean filter)"
    )
    assert refused.hint.startswith(
        "write HEAD's bytes back (rm scripts/run_one.v1.sh && git checkout -- "
        "scripts/run_one.v1.sh)"
    )
    # What the hint says works.
    wrapper.unlink()
    git(repo, "checkout", "--", "scripts/run_one.v1.sh")
    assert verdict(repo).passed


POINTER_FILTER = """\
import hashlib, sys
data = sys.stdin.buffer.read()
sys.stdout.write("version https://git-lfs.github.com/spec/v1\\n"
                 f"oid sha256:{hashlib.sha256(data).hexdigest()}\\nsize {len(data)}\\n")
"""


def test_a_git_lfs_file_is_compared_with_the_content_its_pointer_names(repo: Path) -> None:
    """git-lfs is not installed here: its clean filter (content in, pointer out) is five lines
    of Python, configured as git-lfs configures its own."""
    (repo.parent / "lfs_clean.py").write_text(POINTER_FILTER)
    git(repo, "config", "filter.lfs.clean", f"python3 {repo.parent / 'lfs_clean.py'}")
    (repo / ".gitattributes").write_text("*.bin filter=lfs -text\n")
    (repo / "weights.bin").write_bytes(b"\x00\x01weights" * 50)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "weights in LFS")
    blob = git(repo, "cat-file", "-p", "HEAD:weights.bin")
    assert blob.startswith("version https://git-lfs.github.com/spec/v1\n")
    paths = (*PATHS, "weights.bin")
    facts = gitfacts.repo_facts(repo, paths)
    assert "weights.bin" in facts.tracked and facts.dirty == set()
    assert verdict(repo, paths).passed
    (repo / "weights.bin").write_bytes(b"\x00\x01other!!" * 50)
    git(repo, "update-index", "--assume-unchanged", "weights.bin")
    assert "weights.bin" in gitfacts.repo_facts(repo, paths).dirty


def test_an_edit_that_keeps_size_and_mtime_fools_git_status_not_the_gate(repo: Path) -> None:
    """With core.trustctime off (shared filesystems), git status trusts size and mtime: an
    edit of the same size with the old mtime put back is invisible to it."""
    git(repo, "config", "core.trustctime", "false")
    config = repo / "configs" / "baseline.yaml"
    old = 1_600_000_000
    os.utime(config, (old, old))
    git(repo, "add", "configs/baseline.yaml")  # the index records the old mtime
    git(repo, "commit", "-qm", "an old config", "--allow-empty")
    text = config.read_bytes()
    config.write_bytes(text[:-2] + (b"9\n" if text[-2:] != b"9\n" else b"8\n"))
    os.utime(config, (old, old))
    assert status(repo) == ""
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.unseen == {"configs/baseline.yaml"} <= facts.dirty
    assert facts.converted == set()
    refused = verdict(repo)
    assert refused.reason == (
        "configs/baseline.yaml changed since HEAD, though git status calls it clean (it "
        "trusts its unchanged size and modification time)"
    )
    # What the hint says works: touched, git sees the change, and commits it.
    assert refused.hint.startswith("touch configs/baseline.yaml so that git reads it again")
    git(repo, "add", "configs/baseline.yaml")
    assert status(repo) == ""  # git add trusted the stat data too
    config.touch()
    git(repo, "add", "configs/baseline.yaml")
    git(repo, "commit", "-qm", "the edit, committed")
    assert verdict(repo).passed


def test_a_replaced_head_is_compared_with_the_commit_itself(repo: Path) -> None:
    """`git replace` makes HEAD's id show another commit's tree, locally only: the recorded
    commit would not hold what ran."""
    head = git(repo, "rev-parse", "HEAD").strip()
    (repo / MANIFEST).write_text((repo / MANIFEST).read_text() + "# only in the replacement\n")
    git(repo, "commit", "-qam", "the replacement")
    other = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "reset", "-q", "--soft", head)
    git(repo, "replace", head, other)
    git(repo, "reset", "-q", "--hard", head)
    assert status(repo) == "" and "# only in the replacement" in (repo / MANIFEST).read_text()
    facts = gitfacts.repo_facts(repo, PATHS)
    assert facts.head == head and MANIFEST in facts.dirty
    assert not verdict(repo).passed
