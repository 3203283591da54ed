"""Fixtures for template tests: real copier and cookiecutter renders of the template."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from campaignops import __version__
from campaignops.generate import answers as answers_mod
from campaignops.generate import install_source
from tests.conftest import made_once

ROOT = Path(__file__).resolve().parents[2]
# One row per engine comparison: together they cover every backend, every ci and every domain.
MATRIX: tuple[Mapping[str, str], ...] = (
    {"backends": "local", "ci": "github", "domain": "other"},
    {
        "backends": "alpine,polaris,crux,local",
        "ci": "gitlab",
        "domain": "md",
        "smoke_backend": "local",
    },
    {"backends": "vast-ai,runpod,lambda,generic-ssh", "ci": "both", "domain": "ml-training"},
    {
        "backends": "generic-slurm,generic-pbs,generic-gridengine,kubernetes,local",
        "ci": "none",
        "domain": "quantum-chemistry",
        "require_pushed": "no",
    },
)
# Pages whose site facts are placeholders the user must fill in (flagged by STALE002).
PLACEHOLDER_PAGES = ("generic-slurm", "generic-pbs", "generic-gridengine")


# What a pip install of campaignops from a git repository needs (`schemas` is a symlink into the
# package; copier.yml and template/ are force-included in the wheel).
SOURCE_ITEMS = ("src", "pyproject.toml", "README.md", "schemas", "copier.yml", "template")


@dataclass(frozen=True)
class Mirror:
    """A git repository holding this checkout's working tree, tagged like a release."""

    path: Path
    tag: str

    @property
    def requirement(self) -> str:
        return f"campaignops @ git+{install_source.local_url(self.path)}@{self.tag}"


def make_mirror(dest: Path) -> Mirror:
    """This checkout's working tree (uncommitted edits included: what is being tested), committed
    and tagged v<version> in ``dest``: the source a campaign's CI and hooks install from."""
    for name in SOURCE_ITEMS:
        src = ROOT / name
        if src.is_symlink():
            (dest / name).symlink_to(src.readlink())
        elif src.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*_cache")
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)
    tag = f"v{__version__}"
    ident = ["-c", "user.name=Test", "-c", "user.email=test@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "mirror"], ["tag", tag]):
        subprocess.run(["git", *ident, *args], cwd=dest, check=True, capture_output=True)
    return Mirror(path=dest, tag=tag)


@pytest.fixture(scope="session")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Mirror:
    """One mirror for the whole test run (all workers): the hook environments built from it
    are then shared too."""
    path = made_once(tmp_path_factory, "campaignops mirror", make_mirror)
    return Mirror(path=path, tag=f"v{__version__}")


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the whole test run (all workers; pre-commit locks it while it
    installs): each hook environment is built once."""
    return made_once(tmp_path_factory, "PRE_COMMIT_HOME", lambda _: None)


def full_answers(slug: str, extra: Mapping[str, str]) -> dict[str, str]:
    data = {q.name: q.default for q in answers_mod.QUESTIONS}
    data.update(campaign_slug=slug, campaign_name=slug)
    data.update(extra)
    if "smoke_backend" not in extra:
        data["smoke_backend"] = data["backends"].split(",")[0]
    return data


# What copier renders from: a git template, which it clones for every render. Given this
# checkout, that was the project's whole history and a `git status` of its whole working tree
# (~0.5 s of CPU a render, ~100 renders); copier reads only copier.yml and template/, so they
# are committed alone (this checkout's edits included, as copier includes a dirty template's)
# in a repository of this run, made once for all workers. Still a git template, at its HEAD.
COPIER_ITEMS = ("copier.yml", "template")
_copier_source: list[Path] = []


def _make_copier_source(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIER_ITEMS:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(src, dest / name)
    ident = ["-c", "user.name=Test", "-c", "user.email=test@example.org"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "template"]):
        subprocess.run(["git", *ident, *args], cwd=dest, check=True, capture_output=True)


@pytest.fixture(scope="session", autouse=True)
def copier_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository ``render_copier`` renders from (see COPIER_ITEMS)."""
    if not _copier_source:
        _copier_source.append(made_once(tmp_path_factory, "copier source", _make_copier_source))
    return _copier_source[0]


def render_copier(dest: Path, data: Mapping[str, str]) -> Path:
    import copier

    source = _copier_source[0] if _copier_source else ROOT
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        copier.run_copy(str(source), str(dest), data=dict(data), defaults=True, quiet=True)
    return dest


def render_cookiecutter(out: Path, data: Mapping[str, str]) -> Path:
    from cookiecutter.main import cookiecutter

    out.mkdir(parents=True, exist_ok=True)
    cookiecutter(
        str(ROOT),
        directory="template",
        no_input=True,
        extra_context=dict(data),
        output_dir=str(out),
    )
    return out / data["campaign_slug"]


@pytest.fixture(scope="session")
def rendered(
    tmp_path_factory: pytest.TempPathFactory, mirror: Mirror
) -> dict[int, tuple[Path, Path]]:
    """Each MATRIX row rendered by both engines, once for the whole test run (all workers):
    {row: (copier_dir, cookiecutter_dir)}; their hooks install campaignops from the local
    mirror of this checkout. Read them; copy them (``copy_tree``) to change them."""

    def render(base: Path) -> None:
        for i, extra in enumerate(MATRIX):
            slug = f"camp-{i}"
            data = full_answers(slug, {**extra, "campaignops_requirement": mirror.requirement})
            render_copier(base / "copier" / slug, data)
            render_cookiecutter(base / "cookiecutter", data)

    base = made_once(tmp_path_factory, f"rendered\0{mirror.requirement}", render)
    return {
        i: (base / "copier" / f"camp-{i}", base / "cookiecutter" / f"camp-{i}")
        for i in range(len(MATRIX))
    }


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest
