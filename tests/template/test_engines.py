"""One source, two engines: the same questions, the same rules, the same files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from campaignops.generate import answers as answers_mod
from tests.template.conftest import MATRIX, ROOT, full_answers, render_cookiecutter, render_copier

ANSWERS_FILE = ".copier-answers.yml"


def _copier_questions() -> dict[str, dict[str, object]]:
    data = yaml.safe_load((ROOT / "copier.yml").read_text())
    return {k: v for k, v in data.items() if not k.startswith("_") and k != "cookiecutter"}


def _cookiecutter_questions() -> dict[str, object]:
    data = json.loads((ROOT / "template" / "cookiecutter.json").read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def test_questions_in_sync() -> None:
    cop, coo = _copier_questions(), _cookiecutter_questions()
    assert list(cop) == list(coo) == list(answers_mod.NAMES)
    for q in answers_mod.QUESTIONS:
        c, k = cop[q.name], coo[q.name]
        if q.choices:
            assert isinstance(k, list)
            assert c["choices"] == list(q.choices)
            assert sorted(k) == sorted(q.choices) and k[0] == c["default"] == q.default
        else:
            # The same Jinja default, spelled for each engine's namespace.
            assert str(k).replace("cookiecutter.", "") == c["default"]
        assert (
            c["help"]
            == q.help
            == json.loads((ROOT / "template" / "cookiecutter.json").read_text())["__prompts__"][
                q.name
            ]
        )


def test_copier_computed_mapping_carries_every_answer() -> None:
    spec = yaml.safe_load((ROOT / "copier.yml").read_text())["cookiecutter"]
    assert spec["type"] == "yaml" and spec["when"] is False
    for name in answers_mod.NAMES:
        assert f"{name}={name}" in spec["default"]


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != ANSWERS_FILE:
            mode = stat.S_IMODE(path.stat().st_mode) & 0o111
            out[path.relative_to(root).as_posix()] = (path.read_bytes(), mode)
    return out


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_engines_give_byte_identical_trees(rendered, row: int) -> None:  # type: ignore[no-untyped-def]
    a, b = rendered[row]
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb)
    for rel in fa:
        assert fa[rel] == fb[rel], rel
    assert (a / ANSWERS_FILE).is_file() and not (b / ANSWERS_FILE).exists()


def test_matrix_covers_every_backend_ci_and_domain() -> None:
    assert {b for row in MATRIX for b in row["backends"].split(",")} == set(answers_mod.BACKENDS)
    assert {row["ci"] for row in MATRIX} == set(answers_mod.CI_CHOICES)
    assert {row["domain"] for row in MATRIX} == set(answers_mod.DOMAINS)


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_backend_pages_and_workflows_follow_the_answers(rendered, row: int) -> None:  # type: ignore[no-untyped-def]
    root = rendered[row][0]
    chosen = set(MATRIX[row]["backends"].split(","))
    pages = {p.stem for p in (root / "backends").glob("*.md")} - {"TEMPLATE"}
    assert pages == chosen
    ci = MATRIX[row]["ci"]
    assert (root / ".github/workflows/checks.yml").is_file() == (ci in ("github", "both"))
    assert (root / ".gitlab-ci.yml").is_file() == (ci in ("gitlab", "both"))


HOSTILE_REFUSED = {
    "campaign_slug": ["Bad Slug", "../escape", "a/b", "-lead", "x" * 64, "$(id)", ""],
    "owner_email": ["$(reboot)@x.org", "a@b", "`id`@x.org", "a b@x.org", 'a"@x.org'],
    "backends": ["local, alpine", "local,local", "slurm", "local,", ""],
    "campaign_name": ["two\nlines", "", "x" * 101, "tab\there", "{{ 7*7 }}", "a {% if %}"],
    "description": ["line\nbreak", "x" * 501, "{{ cycler.__init__.__globals__.os }}", "{# c #}"],
    "owner_name": ["{{ 7*7 }}"],
    "stale_after_months": ["0", "121", "six", "-1"],
    "hpc_allocation_cap_percent": ["101", "50%"],
    "cloud_budget_usd": ["-5", "lots"],
    "smoke_backend": ["alpine"],
    "domain": ["chemistry"],
    "ci": ["jenkins"],
    "require_pushed": ["maybe"],
}


def _copier_accepts(tmp: Path, data: dict[str, str]) -> bool:
    try:
        render_copier(tmp, data)
    except Exception as exc:  # copier raises ValueError/ValidationError for a validator's message
        if "must" in str(exc) or "Invalid choice" in str(exc) or "Validation" in type(exc).__name__:
            return False
        raise
    return True


@pytest.mark.parametrize(
    ("name", "value"), [(n, v) for n, vs in HOSTILE_REFUSED.items() for v in vs]
)
def test_copier_validators_and_the_package_refuse_the_same(
    tmp_path: Path, name: str, value: str
) -> None:
    data = full_answers("camp", {name: value})
    assert name in answers_mod.validate(data)
    assert not _copier_accepts(tmp_path / "out", data)
    assert not (tmp_path / "out" / "campaign.yaml").exists()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("campaign_name", "Ünïcødé – O'Brien's \"sweep\" { 7*7 } $(id) `id`"),
        ("description", "uses ${HOME}, $(rm -rf ~), `reboot`, {x} % # and \\ backslashes"),
        ("owner_name", "Zoë O'Connor-Łukasiewicz"),
        ("campaign_slug", "123"),
        ("stale_after_months", "120"),
        ("cloud_budget_usd", "1500.50"),
    ],
)
def test_copier_validators_and_the_package_accept_the_same(
    tmp_path: Path, name: str, value: str
) -> None:
    data = full_answers("camp" if name != "campaign_slug" else value, {name: value})
    assert answers_mod.validate(data) == {}
    assert _copier_accepts(tmp_path / "out", data)


def test_cookiecutter_hook_refuses_with_the_package_message(tmp_path: Path) -> None:
    from cookiecutter.exceptions import FailedHookException

    data = full_answers("camp", {"owner_email": "$(reboot)@x.org"})
    with pytest.raises(FailedHookException):
        render_cookiecutter(tmp_path, data)
    assert not (tmp_path / "camp").exists()


def test_hostile_answers_are_inert_in_the_generated_campaign(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    evil = f"$(touch {canary}) `touch {canary}` '; touch {canary}; ' {{ 7*7 }} \"q\" \\"
    data = full_answers(
        "camp", {"campaign_name": evil[:100], "description": evil, "owner_name": evil[:100]}
    )
    for root in (render_copier(tmp_path / "c", data), render_cookiecutter(tmp_path / "k", data)):
        policy = yaml.safe_load((root / "campaign.yaml").read_text())
        assert policy["description"] == evil
        assert policy["owner"]["name"] == evil[:100]
        assert evil[:100] in (root / "README.md").read_text()
        # Run every generated script the way a user would: nothing from the answers executes.
        env = {**os.environ, "CAMPAIGN_OUT": str(tmp_path / "runs")}
        import subprocess

        proc = subprocess.run(
            ["bash", "scripts/run_queue.v1.sh", "queues/example.txt"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not canary.exists()


@pytest.mark.parametrize("row", range(len(MATRIX)))
def test_no_engine_leaves_an_empty_directory(rendered, row: int) -> None:  # type: ignore[no-untyped-def]
    # `.github/` cannot be conditional by name: Copier's _exclude and cookiecutter's
    # post_gen_project hook drop it when the answers leave it empty (ci=gitlab or none).
    for root in rendered[row]:
        empty = [p for p in root.rglob("*") if p.is_dir() and not any(p.iterdir())]
        assert empty == [], empty
        assert (root / ".github").is_dir() == (MATRIX[row]["ci"] in ("github", "both"))
