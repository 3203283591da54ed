"""Story: a user tries to run content that is in no commit, and `campaign submit` refuses.

Each trick below made `git status` clean while the job would have run something HEAD does not
hold (issue 8, defect 17). Played through the CLI on the local backend, in a campaign made by
`campaign new`: each one exits 1 at the committed gate, with nothing submitted (no ledger
record, no job script, no local job started).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result, git

Run = Callable[..., Result]
GRID = "manifests/example.yaml"
QUEUE = "manifests/example-queue.yaml"


@pytest.fixture
def camp(demo: Path) -> Path:
    return demo


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def refused(run: Run, root: Path, manifest: str, *why: str) -> Result:
    """Submit (not a dry run): exit 1 at the committed gate, saying ``why``; nothing started."""
    ledger = (root / ".campaign/ledger.jsonl").read_bytes()
    result = run("submit", manifest, "--stage", "smoke")
    assert result.code == 1, (result.out, result.err)
    assert result.err.startswith("campaign: error: committed: "), result.err
    for part in why:
        assert part in result.err, result.err
    assert "hint: " in result.err
    assert (root / ".campaign/ledger.jsonl").read_bytes() == ledger
    assert not (root / ".campaign/jobs").exists()
    assert not (root / ".campaign/local").exists()
    return result


def test_the_untricked_campaign_passes_the_committed_gate(camp: Path, run: Run) -> None:
    """The control: without a trick, both example manifests pass every gate."""
    for manifest in (GRID, QUEUE):
        dry = run("submit", manifest, "--stage", "smoke", "--dry-run")
        assert dry.code == 0, dry.out
        assert "holds every file submitted" in dry.out


def test_a_manifest_committed_as_a_symlink_to_a_file_outside_then_edited_there(
    camp: Path, run: Run, tmp_path: Path
) -> None:
    outside = tmp_path / "my-manifest.yaml"
    outside.write_text((camp / GRID).read_text())
    (camp / GRID).unlink()
    (camp / GRID).symlink_to(outside)
    commit(camp, "manifest kept in my home")
    outside.write_text(outside.read_text().replace("epochs: 2", "epochs: 3"))
    assert git(camp, "status", "--porcelain") == ""
    result = refused(run, camp, GRID, f"{GRID} -> {outside}", "out of the repository")
    assert "replace the symlink with a copy of what it points to" in result.err


def test_a_wrapper_committed_as_a_relative_symlink_leaving_the_repository(
    camp: Path, run: Run, tmp_path: Path
) -> None:
    wrapper = camp / "scripts/run_one.v1.sh"
    (tmp_path / "run_one.sh").write_bytes(wrapper.read_bytes())
    wrapper.unlink()
    wrapper.symlink_to("../../run_one.sh")
    commit(camp, "wrapper kept outside")
    refused(run, camp, QUEUE, "scripts/run_one.v1.sh -> ../../run_one.sh")


@pytest.mark.parametrize("bit", ["skip-worktree", "assume-unchanged"])
@pytest.mark.parametrize(
    ("edited", "manifest"),
    [
        (GRID, GRID),
        ("scripts/smoke_task.py", GRID),  # named by the grid's cmd
        ("configs/example/wide.yaml", GRID),  # named by the grid's cmd, through ${cfg}
        ("queues/example.txt", QUEUE),
    ],
)
def test_an_index_bit_hiding_an_edit(
    camp: Path, run: Run, bit: str, edited: str, manifest: str
) -> None:
    (camp / edited).write_text((camp / edited).read_text() + "\n# not committed\n")
    git(camp, "update-index", f"--{bit}", edited)
    assert git(camp, "status", "--porcelain") == ""
    result = refused(run, camp, manifest, f"{edited} ({bit})", "git status cannot see")
    assert f"git update-index --no-{bit} {edited}" in result.err


@pytest.mark.parametrize(
    ("where", "rule"),
    [(".git/info/exclude", "scripts/helper.py"), (".gitignore", "helper.py")],
)
def test_a_script_hidden_by_an_ignore_rule(camp: Path, run: Run, where: str, rule: str) -> None:
    (camp / where).write_text((camp / where).read_text() + f"\n{rule}\n")
    if where == ".gitignore":
        commit(camp, "ignore the helper")
    (camp / "scripts/helper.py").write_text("print('in no commit')\n")
    (camp / "scripts/smoke_task.py").write_text(
        (camp / "scripts/smoke_task.py").read_text() + "\nimport helper  # noqa\n"
    )
    commit(camp, "the task imports a helper")
    assert git(camp, "status", "--porcelain") == ""
    refused(run, camp, GRID, "ignored or excluded under", "scripts/helper.py")


def _grid_reading(camp: Path, cfg: str) -> str:
    """A committed grid manifest whose command reads configs/example/<cfg>.yaml."""
    text = (camp / GRID).read_text().replace("cfg: [baseline, wide]", f"cfg: [baseline, {cfg}]")
    (camp / "manifests/grid2.yaml").write_text(
        text.replace("project: example", "project: fresh").replace("runs/example", "runs/fresh")
    )
    return "manifests/grid2.yaml"


def test_a_config_the_grid_reads_that_was_never_committed(camp: Path, run: Run) -> None:
    manifest = _grid_reading(camp, "fresh")
    commit(camp, "a grid over a fresh config")
    (camp / "configs/example/fresh.yaml").write_text("width: 64\n")
    refused(run, camp, manifest, "not committed: configs/example/fresh.yaml")


@pytest.mark.parametrize(
    ("where", "rule"),
    [(".gitignore", "fresh.yaml"), (".git/info/exclude", "configs/example/fresh.yaml")],
)
def test_a_config_the_grid_reads_that_an_ignore_rule_hides(
    camp: Path, run: Run, where: str, rule: str
) -> None:
    manifest = _grid_reading(camp, "fresh")
    (camp / where).write_text((camp / where).read_text() + f"\n{rule}\n")
    commit(camp, "a grid over an ignored config")
    (camp / "configs/example/fresh.yaml").write_text("width: 64\n")
    assert git(camp, "status", "--porcelain") == ""
    line = len((camp / where).read_text().splitlines())
    result = refused(
        run,
        camp,
        manifest,
        f"ignored by git, so never committed: configs/example/fresh.yaml ({where}:{line}: {rule})",
    )
    assert "git add configs/example/fresh.yaml && git commit" in result.err


def test_a_config_committed_as_a_symlink_out_of_the_repository(
    camp: Path, run: Run, tmp_path: Path
) -> None:
    (tmp_path / "wide.yaml").write_bytes((camp / "configs/example/wide.yaml").read_bytes())
    (camp / "configs/example/wide.yaml").unlink()
    (camp / "configs/example/wide.yaml").symlink_to(tmp_path / "wide.yaml")
    commit(camp, "config kept outside")
    refused(run, camp, GRID, "configs/example/wide.yaml -> ")


# Commands that read configs/extra/ without naming a file there as a shell word of their own.
INDIRECT = {
    "bash -c": "bash -c 'cat configs/extra/base.yaml configs/extra/stray.yaml'",
    "glob": "cat configs/extra/*.yaml",
    "brace expansion": "cat configs/extra/{base,stray}.yaml",
    "directory argument": "ls -R configs/extra",
    "variable": "d=configs/extra; cat $d/base.yaml $d/stray.yaml",
}


def _indirect(camp: Path, command: str) -> str:
    """A committed manifest of one job running ``command``, and a committed config it reads."""
    (camp / "configs/extra").mkdir()
    (camp / "configs/extra/base.yaml").write_text("width: 32\n")
    (camp / "manifests/indirect.yaml").write_text(
        "project: indirect\nbackend: local\nresources: {time: '00:05:00'}\n"
        "smoke:\n  args: {epochs: 1}\n"
        f"jobs:\n  - id: reads\n    cmd: {json.dumps(command)}\n"
    )
    commit(camp, "a job reading configs/extra/ indirectly")
    return "manifests/indirect.yaml"


@pytest.mark.parametrize("command", INDIRECT.values(), ids=INDIRECT.keys())
def test_an_untracked_file_a_command_reaches_indirectly(camp: Path, run: Run, command: str) -> None:
    manifest = _indirect(camp, command)
    (camp / "configs/extra/stray.yaml").write_text("width: 4096\n")
    result = refused(run, camp, manifest, "configs/extra/stray.yaml")
    assert "git add configs/extra/stray.yaml" in result.err


@pytest.mark.parametrize("command", INDIRECT.values(), ids=INDIRECT.keys())
def test_a_modified_file_a_command_reaches_indirectly(camp: Path, run: Run, command: str) -> None:
    manifest = _indirect(camp, command)
    (camp / "configs/extra/base.yaml").write_text("width: 4096\n")
    refused(run, camp, manifest, "configs/extra/base.yaml")
