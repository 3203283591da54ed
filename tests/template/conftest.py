"""Fixtures for template tests: real copier and cookiecutter renders of the template."""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from campaignops import answers as answers_mod

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
        "backends": "generic-slurm,generic-pbs,kubernetes,local",
        "ci": "none",
        "domain": "quantum-chemistry",
        "require_pushed": "no",
    },
)
# Pages whose site facts are placeholders the user must fill in (flagged by STALE002).
PLACEHOLDER_PAGES = ("generic-slurm", "generic-pbs")


def full_answers(slug: str, extra: Mapping[str, str]) -> dict[str, str]:
    data = {q.name: q.default for q in answers_mod.QUESTIONS}
    data.update(campaign_slug=slug, campaign_name=slug)
    data.update(extra)
    if "smoke_backend" not in extra:
        data["smoke_backend"] = data["backends"].split(",")[0]
    return data


def render_copier(dest: Path, data: Mapping[str, str]) -> Path:
    import copier

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        copier.run_copy(str(ROOT), str(dest), data=dict(data), defaults=True, quiet=True)
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
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, Path]]:
    """Each MATRIX row rendered by both engines: {row: (copier_dir, cookiecutter_dir)}."""
    base = tmp_path_factory.mktemp("engines")
    out: dict[int, tuple[Path, Path]] = {}
    for i, extra in enumerate(MATRIX):
        slug = f"camp-{i}"
        data = full_answers(slug, extra)
        a = render_copier(base / "copier" / slug, data)
        b = render_cookiecutter(base / "cookiecutter", data)
        out[i] = (a, b)
    return out


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest
