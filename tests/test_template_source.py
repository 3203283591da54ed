"""The template cache: one commit and tag per distinct template content, old tags kept."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from campaignops.core.errors import CampaignError
from campaignops.generate import new as scaffold
from campaignops.generate import template_source


def copy(dest: Path) -> Path:
    dest.mkdir()
    shutil.copy2(scaffold.template_root() / "copier.yml", dest / "copier.yml")
    shutil.copytree(scaffold.template_root() / "template", dest / "template")
    return dest


def files_at(repo: Path, tag: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", tag],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def test_same_content_same_tag_and_new_content_a_local_version(tmp_path: Path) -> None:
    root = copy(tmp_path / "pkg")
    (root / "template" / "hooks" / "__pycache__").mkdir()
    (root / "template" / "hooks" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (root / "README.md").write_text("not the template\n", encoding="utf-8")
    cache = tmp_path / "cache"

    first = template_source.ensure(root=root, version="0.1.0", cache=cache)
    again = template_source.ensure(root=root, version="0.1.0", cache=cache)
    assert first == again
    assert first.tag == "v0.1.0" and first.path == cache and first.url == str(cache)
    listed = files_at(cache, "v0.1.0")
    assert "copier.yml" in listed and "template/cookiecutter.json" in listed
    assert not [f for f in listed if "__pycache__" in f or f == "README.md"]

    (root / "copier.yml").write_text(
        (root / "copier.yml").read_text(encoding="utf-8") + "# changed\n", encoding="utf-8"
    )
    dev = template_source.ensure(root=root, version="0.1.0+dirty", cache=cache)
    assert dev.tag.startswith("v0.1.0+") and len(dev.tag) == len("v0.1.0+") + 12
    assert template_source.ensure(root=root, version="0.1.0", cache=cache) == dev
    newer = template_source.ensure(root=root, version="0.2.0", cache=cache)
    assert newer.tag == "v0.2.0"
    assert template_source.tags(cache) == ("v0.1.0", dev.tag, "v0.2.0")
    log = subprocess.run(
        ["git", "-C", str(cache), "rev-list", "--count", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert log.strip() == "3"  # one history: every older tag is an ancestor of main


def test_cache_location_and_recorded_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert template_source.cache_dir({"CAMPAIGNOPS_TEMPLATE_CACHE": str(tmp_path)}) == tmp_path
    assert template_source.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "campaignops" / "template"
    )
    monkeypatch.setenv("HOME", str(tmp_path))
    assert template_source.cache_dir({}) == tmp_path / ".cache" / "campaignops" / "template"
    assert template_source.recorded_url(tmp_path / ".cache" / "x") == "~/.cache/x"
    assert template_source.recorded_url(Path("/elsewhere/x")) == "/elsewhere/x"


def test_a_version_copier_cannot_order_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match="not a PEP 440 release"):
        template_source.ensure(root=copy(tmp_path / "pkg"), version="main", cache=tmp_path / "c")
