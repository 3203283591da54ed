"""`campaign new`: a committed campaign from either engine, refusals before anything is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from campaignops.generate import new as scaffold


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize("engine", ["copier", "cookiecutter"])
def test_new_with_defaults_commits_a_clean_campaign(
    tmp_path: Path, run, monkeypatch, engine: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run("new", "my-campaign", "--defaults", "--engine", engine, "--data", "domain=md")
    assert result.code == 0, result.err
    root = tmp_path / "my-campaign"
    assert "cd my-campaign" in result.out and "campaign check" in result.out
    assert _git(root, "log", "--format=%s").splitlines() == [
        "New campaign my-campaign (campaignops template)"
    ]
    assert _git(root, "status", "--porcelain") == ""
    policy = yaml.safe_load((root / "campaign.yaml").read_text())
    assert (policy["name"], policy["backends"], policy["smoke_backend"]) == (
        "my-campaign",
        ["local"],
        "local",
    )
    monkeypatch.chdir(root)
    check = run("check")
    assert (check.code, check.out) == (0, ""), check.out + check.err


def test_answers_file_only_with_copier(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert run("new", "a", "--defaults").code == 0
    assert run("new", "b", "--defaults", "--engine", "cookiecutter").code == 0
    answers = yaml.safe_load((tmp_path / "a" / ".copier-answers.yml").read_text())
    assert answers["campaign_slug"] == "a"
    assert not (tmp_path / "b" / ".copier-answers.yml").exists()


def test_refused_answer_exits_2_and_writes_nothing(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run(
        "new",
        "c",
        "--defaults",
        "--data",
        "owner_email=$(reboot)@x.org",
        "--data",
        "backends=local,slurm",
    )
    assert result.code == 2
    assert "owner_email must be an e-mail address" in result.err
    assert "backends must be a comma-separated list" in result.err
    assert not (tmp_path / "c").exists()


def test_directory_name_must_be_a_valid_slug(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run("new", "My Campaign", "--defaults")
    assert result.code == 2 and "campaign_slug must be lowercase" in result.err


def test_never_overwrites(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine")
    result = run("new", "d", "--defaults")
    assert result.code == 2 and "exists and is not empty" in result.err
    assert (tmp_path / "d" / "notes.txt").read_text() == "mine"


def test_unknown_question_and_bad_data(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert (
        "unknown question(s): colour" in run("new", "e", "--defaults", "--data", "colour=red").err
    )
    assert "expected NAME=VALUE" in run("new", "e", "--defaults", "--data", "domain").err


def test_without_a_terminal_asks_for_defaults(tmp_path: Path, monkeypatch) -> None:
    proc = subprocess.run(
        ["python", "-m", "campaignops", "new", "f"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and "pass --defaults" in proc.stderr
    assert not (tmp_path / "f").exists()


def test_template_root_is_the_checkout_in_development() -> None:
    root = scaffold.template_root()
    assert (root / "copier.yml").is_file() and (root / "template" / "cookiecutter.json").is_file()


def test_wheel_ships_the_template(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[1]
    subprocess.run(
        ["python", "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    import zipfile

    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "campaignops/_template/copier.yml" in names
    assert "campaignops/_template/template/cookiecutter.json" in names
    assert any(n.endswith("scripts/run_one.v1.sh") for n in names)
