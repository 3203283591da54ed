"""The install source a campaign records: the rule, --source, this installation, campaign new."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from campaignops import __version__
from campaignops.core.errors import UsageError
from campaignops.generate import answers as answers_mod
from campaignops.generate import install_source

ROOT = Path(__file__).resolve().parents[1]

ACCEPTED = [
    "campaignops==0.1.0",
    "campaignops==1.2.3rc1.post2.dev3",
    "campaignops==0.1.0+g1a2b3c",
    "campaignops @ git+https://github.com/org/campaignops.git@v0.1.0",
    "campaignops @ git+https://gitlab.example.org/group/sub/campaignops@0f1e2d3c4b5a69788796a5b4c3d2e1f001122334",
    "campaignops @ git+ssh://git@github.com/org/campaignops.git@v0.1.0",
    "campaignops @ git+file:///srv/mirrors/campaignops@v0.1.0",
    "campaignops @ git+file://localhost/srv/mirrors/campaignops@v0.1.0",
    "campaignops @ https://files.example.org/campaignops-0.1.0-py3-none-any.whl",
    "campaignops @ file:///wheels/campaignops-0.1.0.tar.gz",
]
REFUSED = [
    "campaignops",  # not pinned
    "campaignops>=0.1",
    "campaignops==0.1.0\n",
    "campaignops==0.1.0; python_version>'3'",
    "other==0.1.0",
    "campaignops @ git+https://github.com/org/campaignops.git",  # no tag or commit
    'campaignops @ git+https://example.org/x"y@v1',
    "campaignops @ git+https://example.org/$(id)@v1",
    "campaignops @ git+https://example.org/`id`@v1",
    "campaignops @ git+https://example.org/a b@v1",
    "campaignops @ git+https://example.org/{{x}}@v1",
    "campaignops @ git+ftp://example.org/x@v1",
    "campaignops @ https://example.org/campaignops",  # not an archive
]


@pytest.mark.parametrize("value", ACCEPTED)
def test_accepted_requirements_are_ones_pip_parses(value: str) -> None:
    assert answers_mod.validate_one("campaignops_requirement", value) is None
    parsed = Requirement(value)
    assert parsed.name == "campaignops" and not parsed.marker and not parsed.extras
    assert bool(parsed.url) != bool(str(parsed.specifier))
    assert install_source.check(value) == value


@pytest.mark.parametrize("value", REFUSED)
def test_refused_requirements(value: str) -> None:
    message = answers_mod.MESSAGES["campaignops_requirement"]
    assert answers_mod.validate_one("campaignops_requirement", value) == message
    with pytest.raises(UsageError, match="campaignops_requirement must pin campaignops"):
        install_source.check(value)


def test_the_template_default_pins_this_version() -> None:
    wanted = f"campaignops=={__version__}"
    question = {q.name: q for q in answers_mod.QUESTIONS}["campaignops_requirement"]
    copier = yaml.safe_load((ROOT / "copier.yml").read_text(encoding="utf-8"))
    cookiecutter = json.loads((ROOT / "template/cookiecutter.json").read_text(encoding="utf-8"))
    assert question.default == copier["campaignops_requirement"]["default"] == wanted
    assert cookiecutter["campaignops_requirement"] == wanted
    assert install_source.released() == wanted


@pytest.mark.parametrize(
    ("source", "wanted"),
    [
        ("https://github.com/org/campaignops.git@v9.9.9", "git+https://github.com/org/campaignops.git@v9.9.9"),
        ("git+https://github.com/org/campaignops.git@abc123", "git+https://github.com/org/campaignops.git@abc123"),
        ("ssh://git@github.com/org/campaignops.git@v1", "git+ssh://git@github.com/org/campaignops.git@v1"),
    ],
)  # fmt: skip
def test_from_source(source: str, wanted: str) -> None:
    assert install_source.from_source(source) == f"campaignops @ {wanted}"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("git@github.com:org/campaignops.git", "scp-like git addresses"),
        ("ftp://example.org/campaignops@v1", "scheme 'ftp'"),
        ("https://example.org/a b@v1", "campaignops_requirement must pin"),
        ("", "--source is empty"),
        # No default REF: v<version> is no published tag, and CI would fail on it.
        ("https://github.com/org/campaignops.git", "names no tag or commit"),
        ("ssh://git@github.com/org/campaignops.git", "names no tag or commit"),
        ("/srv/mirror", "names no tag or commit"),
    ],
)
def test_from_source_refusals(source: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        install_source.from_source(source)


def _repository(where: Path) -> str:
    """A git repository at ``where`` with one commit, tagged v1; its commit."""
    where.mkdir()
    ident = ["-c", "user.name=T", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], [*ident, "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(where), "tag", "v1"], check=True, capture_output=True)
    head = subprocess.run(
        ["git", "-C", str(where), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    )
    return head.stdout.strip()


def test_a_local_source_is_a_repository_that_has_the_ref(tmp_path: Path) -> None:
    """A path on this machine is checked before anything is rendered (issue 20): pip would
    fail on a path with no repository or a REF it lacks, in CI and everywhere else."""
    head = _repository(tmp_path / "mirror")
    url = f"file://localhost{tmp_path.as_posix()}/mirror"
    for ref in ("v1", head, head[:12]):
        wanted = f"campaignops @ git+{url}@{ref}"
        assert install_source.from_source(f"{tmp_path}/mirror@{ref}") == wanted
    with pytest.raises(UsageError, match="has no tag or commit 'v2'") as refused:
        install_source.from_source(f"{tmp_path}/mirror@v2")
    assert f"git -C {tmp_path}/mirror rev-parse HEAD" in str(refused.value.hint)
    (tmp_path / "plain").mkdir()
    for path in (tmp_path / "plain", tmp_path / "nowhere"):
        with pytest.raises(UsageError, match=f"{path} is no git repository"):
            install_source.from_source(f"{path}@{head}")


def test_campaign_new_refuses_an_unresolvable_local_source_before_rendering(  # type: ignore[no-untyped-def]
    tmp_path: Path, run, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _repository(tmp_path / "mirror")
    result = run("new", "camp", "--defaults", "--source", f"{tmp_path}/mirror@v9.9.9")
    assert result.code == 2 and "has no tag or commit 'v9.9.9'" in result.err
    assert not (tmp_path / "camp").exists()
    made = run("new", "camp", "--defaults", "--source", f"{tmp_path}/mirror@v1")
    assert made.code == 0 and "a path on this machine: CI on another machine" in made.out


class _Dist:
    def __init__(self, direct_url: dict[str, object] | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.direct_url is None else json.dumps(self.direct_url)


@pytest.mark.parametrize(
    ("direct_url", "wanted"),
    [
        (None, "campaignops==0.1.0"),  # from an index
        ({"url": "file:///home/me/campaignops", "dir_info": {"editable": True}}, "campaignops==0.1.0"),
        (
            {"url": "https://github.com/org/campaignops.git", "vcs_info": {"vcs": "git", "commit_id": "abc123", "requested_revision": "main"}},
            "campaignops @ git+https://github.com/org/campaignops.git@abc123",
        ),
        # A repository on this machine only: CI could not reach it.
        ({"url": "file:///srv/campaignops", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}, "campaignops==0.1.0"),
    ],
)  # fmt: skip
def test_from_installation(
    monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, object] | None, wanted: str
) -> None:
    from importlib import metadata

    monkeypatch.setattr(metadata, "distribution", lambda name: _Dist(direct_url))
    assert install_source.from_installation(version="0.1.0") == wanted


def test_an_editable_checkout_of_a_shared_repository_pins_its_commit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from importlib import metadata

    checkout = tmp_path / "campaignops"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(
        ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@e.org", "commit",
         "-q", "--allow-empty", "-m", "c"],
        check=True,
    )  # fmt: skip
    head = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    editable = {"url": checkout.as_uri(), "dir_info": {"editable": True}}
    monkeypatch.setattr(metadata, "distribution", lambda name: _Dist(editable))
    # No origin: a repository on this machine only.
    assert install_source.from_installation(version="0.1.0") == "campaignops==0.1.0"
    url = "https://github.com/org/campaignops.git"
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", url], check=True)
    assert install_source.from_installation(version="0.1.0") == (f"campaignops @ git+{url}@{head}")


# --- campaign new ------------------------------------------------------------------------------


def _answers(root: Path) -> dict[str, str]:
    data: dict[str, str] = yaml.safe_load((root / ".copier-answers.yml").read_text())
    return data


def test_campaign_new_says_what_ci_fails_on_with_a_release_pin(
    tmp_path: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    pinned = f"campaignops=={__version__}"
    result = run("new", "camp", "--defaults", "--data", f"campaignops_requirement={pinned}")
    assert result.code == 0, result.err
    assert f"CI will pip-install {pinned} from the package index, and fail if" in result.out
    assert "--source URL@COMMIT" in result.out
    sourced = run("new", "other", "--defaults", "--source", "https://example.org/c.git@abc123")
    assert sourced.code == 0 and "package index" not in sourced.out


def test_campaign_new_refuses_a_source_without_a_ref(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run("new", "camp", "--defaults", "--source", "https://example.org/c.git")
    assert result.code == 2 and "names no tag or commit" in result.err, result.err
    assert "--source https://example.org/c.git@COMMIT" in result.err
    assert not (tmp_path / "camp").exists()


def test_campaign_new_records_the_source(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run("new", "camp", "--defaults", "--source", "https://example.org/c.git@v2.0.0")
    assert result.code == 0, result.err
    wanted = "campaignops @ git+https://example.org/c.git@v2.0.0"
    assert f"CI installs: {wanted}\n" in result.out
    assert _answers(tmp_path / "camp")["campaignops_requirement"] == wanted
    hooks = yaml.safe_load((tmp_path / "camp/.pre-commit-config.yaml").read_text())
    check = hooks["repos"][0]["hooks"][0]
    # The hook runs the installed campaign (no download); CI installs the recorded requirement.
    assert check["id"] == "campaign-check" and check["language"] == "system"
    assert check["entry"] == "campaign check --base HEAD"
    assert "additional_dependencies" not in check
    workflow = yaml.safe_load((tmp_path / "camp/.github/workflows/checks.yml").read_text())
    assert workflow["env"] == {"CAMPAIGNOPS_REQUIREMENT": wanted}


def test_campaign_new_takes_the_source_from_the_environment(
    tmp_path: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(install_source.ENV, "https://example.org/c.git@abc")
    result = run("new", "camp", "--defaults", "--engine", "cookiecutter", "--data", "ci=gitlab")
    assert result.code == 0, result.err
    gitlab = yaml.safe_load((tmp_path / "camp/.gitlab-ci.yml").read_text())
    wanted = "campaignops @ git+https://example.org/c.git@abc"
    assert gitlab["variables"]["CAMPAIGNOPS_REQUIREMENT"] == wanted
    assert not (tmp_path / "camp/.github").exists()  # ci=gitlab: no empty .github/


def test_campaign_new_defaults_to_this_release(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(install_source.ENV, raising=False)
    result = run("new", "camp", "--defaults", "--data", "ci=none")
    assert result.code == 0, result.err
    answers = _answers(tmp_path / "camp")
    assert answers["campaignops_requirement"] == install_source.from_installation()
    assert not (tmp_path / "camp/.github").exists()


def test_campaign_new_refuses_two_sources(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run(
        "new",
        "camp",
        "--defaults",
        "--source",
        "https://example.org/c.git@v1",
        "--data",
        "campaignops_requirement=campaignops==0.1.0",
    )
    assert result.code == 2 and "--source and --data campaignops_requirement=" in result.err
    assert not (tmp_path / "camp").exists()


def test_campaign_new_refuses_a_bad_requirement(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run(
        "new", "camp", "--defaults", "--data", 'campaignops_requirement=campaignops @ x"; rm -rf ~'
    )
    assert result.code == 2
    assert "campaignops_requirement must pin campaignops" in result.err
    assert not (tmp_path / "camp").exists()


def test_campaign_new_without_the_engine_names_the_extra(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    real = importlib.util.find_spec

    def without_copier(name: str, *args: object) -> object:
        return None if name == "copier" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(importlib.util, "find_spec", without_copier)
    result = run("new", "camp", "--defaults")
    assert result.code == 2
    assert "campaign new needs copier" in result.err
    assert "pip install 'campaignops[new]'" in result.err
    assert not (tmp_path / "camp").exists()


# A ref to campaignops as the docs write one: a hook's `rev: vX.Y.Z`, a URL's `@vX.Y.Z`.
NAMED_TAG = re.compile(r"(?:\brev:\s*|\.git@|campaignops@|@)(v\d+\.\d+\.\d+)\b")


def test_no_documentation_names_a_tag_that_does_not_exist() -> None:
    """README, docs/ (not decisions.md: it is history) and the template name only tags this
    repository has: a user who copies `rev: v0.1.0` or `--source URL@v0.1.0` gets a failing CI."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "tag", "--list"], capture_output=True, text=True, check=False
    )
    tags = set(listed.stdout.split()) if listed.returncode == 0 else set()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pages += [p for p in sorted((ROOT / "template").rglob("*")) if p.is_file()]
    named = {
        f"{page.relative_to(ROOT)}: {m.group(1)}"
        for page in pages
        if page.name != "decisions.md"
        for m in NAMED_TAG.finditer(page.read_text(encoding="utf-8", errors="replace"))
        if m.group(1) not in tags
    }
    assert not named, sorted(named)
