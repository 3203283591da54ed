"""files_named and reach: the campaign's files a rendered task command names, and the
directories it reaches without naming their files, on a real directory tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaignops.model.named import files_named, reach, words

FILES_BOTH = ("configs/example/wide.yaml", "scripts/train.py")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "camp"
    for rel in (
        "scripts/train.py",
        "scripts/run_one.v1.sh",
        "configs/example/baseline.yaml",
        "configs/example/wide.yaml",
        "data/in.txt",
        "README.md",
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel + "\n")
    (root / "runs" / "example").mkdir(parents=True)
    (tmp_path / "outside.yaml").write_text("lr: 1\n")
    return root


def test_words_are_the_shells_words_with_operators_apart() -> None:
    assert words("python3 -c 'import sys; x' --config=a.yaml<in.txt&&echo a#b 2>&1|tee o") == [
        "python3",
        "-c",
        "import sys; x",
        "--config=a.yaml",
        "<",
        "in.txt",
        "&&",
        "echo",
        "a#b",
        "2",
        ">&",
        "1",
        "|",
        "tee",
        "o",
    ]
    assert words("two  spaces\nsecond line") == ["two", "spaces", "second", "line"]


def test_an_unbalanced_quote_falls_back_to_whitespace_words() -> None:
    assert words("echo 'unbalanced configs/a.yaml") == ["echo", "'unbalanced", "configs/a.yaml"]


def test_the_files_a_grid_command_names(tree: Path) -> None:
    cmd = (
        "python3 scripts/train.py --config configs/example/wide.yaml --task seg "
        "--out runs/example/wide_seg --epochs 2"
    )
    assert files_named([cmd], tree) == ("configs/example/wide.yaml", "scripts/train.py")


def test_values_of_key_value_words_and_redirections_count(tree: Path) -> None:
    cmds = [
        "CAMPAIGN_OUT=runs/smoke bash scripts/run_one.v1.sh configs/example/baseline.yaml t 1",
        "python3 scripts/train.py --config=configs/example/wide.yaml <data/in.txt",
        "CFG=README.md make",
    ]
    assert files_named(cmds, tree) == (
        "README.md",
        "configs/example/baseline.yaml",
        "configs/example/wide.yaml",
        "data/in.txt",
        "scripts/run_one.v1.sh",
        "scripts/train.py",
    )


def test_directories_missing_paths_and_plain_words_are_not_files(tree: Path) -> None:
    cmd = "python3 -c 'print(1)' configs runs/example new/output.json seg 20 ."
    assert files_named([cmd], tree) == ()


def test_paths_are_normalised_and_listed_once_sorted(tree: Path) -> None:
    cmds = [
        "bash ./scripts/../scripts/run_one.v1.sh configs//example/./wide.yaml",
        "bash scripts/run_one.v1.sh configs/example/wide.yaml",
    ]
    assert files_named(cmds, tree) == ("configs/example/wide.yaml", "scripts/run_one.v1.sh")


def test_paths_leaving_the_root_are_left_out_and_absolute_ones_inside_count(tree: Path) -> None:
    outside = tree.parent / "outside.yaml"
    cmds = [
        f"python3 {tree / 'scripts/train.py'} --config {outside}",
        "python3 ../outside.yaml ../camp/README.md",
        f"cat {tree}",
    ]
    # ../camp/README.md leaves the root and comes back: it names the campaign's README.md.
    assert files_named(cmds, tree) == ("README.md", "scripts/train.py")


def test_a_symlink_to_a_file_counts_wherever_it_leads(tree: Path) -> None:
    (tree / "configs/linked.yaml").symlink_to(tree.parent / "outside.yaml")
    (tree / "configs/inner.yaml").symlink_to("example/wide.yaml")
    (tree / "configs/dangling.yaml").symlink_to("nowhere.yaml")
    (tree / "data/dir").symlink_to(tree.parent)
    cmd = "x configs/linked.yaml configs/inner.yaml configs/dangling.yaml data/dir"
    assert files_named([cmd], tree) == ("configs/inner.yaml", "configs/linked.yaml")


def test_the_root_may_be_given_relative(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    assert files_named(["python3 scripts/train.py"], Path("camp")) == ("scripts/train.py",)


@pytest.mark.parametrize(
    ("cmd", "files", "dirs"),
    [
        # bash -c: the quoted command's own words name files.
        ("bash -c 'python3 scripts/train.py configs/example/wide.yaml'", FILES_BOTH, ()),
        ("ssh h \"bash -c 'cat scripts/train.py'\"", ("scripts/train.py",), ()),
        # A glob, a brace, a variable: the directory the word starts from.
        ("cat configs/example/*.yaml", (), ("configs/example",)),
        ("cat configs/example/{wide,narrow}.yaml", (), ("configs/example",)),
        ("cat configs/ex$NAME/a.yaml", (), ("configs",)),
        ("d=configs; cat $d/example/wide.yaml", (), ("", "configs")),
        ("cat `ls configs`", (), ("",)),
        # A directory argument.
        ("ls -R configs/example", (), ("configs/example",)),
        ("find . -name x", (), ("",)),
        # Nothing of the campaign: the runner's output root, a home directory, outside paths.
        ("python3 scripts/train.py --out ${CAMPAIGN_OUT}/a/*", ("scripts/train.py",), ()),
        ("cat $HOME/x ~/y /etc/$X ../z/*", (), ()),
    ],
)
def test_reach_of_what_a_command_expands(
    tree: Path, cmd: str, files: tuple[str, ...], dirs: tuple[str, ...]
) -> None:
    found = reach([cmd], tree)
    assert (found.files, found.dirs) == (files, dirs)
