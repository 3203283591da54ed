"""headtree: HEAD's object ids under the campaign, and the digest of a directory a command
reaches (part of its fingerprint), on a real git repository."""

from __future__ import annotations

from pathlib import Path

from campaignops.model.headtree import ROOT_KEY, head_blobs, outermost, reached
from tests.conftest import git


def test_head_blobs_lists_the_campaigns_committed_files_from_a_subdirectory(
    tmp_path: Path,
) -> None:
    top = tmp_path / "repo"
    for rel in ("outside.txt", "camp/configs/a.yaml", "camp/scripts/t.py"):
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(rel)
    (top / "camp/configs/link.yaml").symlink_to("a.yaml")
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-qm", "one")
    (top / "camp/configs/untracked.yaml").write_text("x")
    blobs = head_blobs(top / "camp")
    assert sorted(blobs) == ["configs/a.yaml", "configs/link.yaml", "scripts/t.py"]
    assert blobs["configs/a.yaml"] == git(top, "rev-parse", "HEAD:camp/configs/a.yaml").strip()
    assert head_blobs(tmp_path) == {}  # not a repository: nothing (the committed gate refuses)


BLOBS = {
    "configs/a.yaml": "1" * 40,
    "configs/b.yaml": "2" * 40,
    "manifests/m.yaml": "3" * 40,
    "STATUS.md": "4" * 40,
    ".campaign/ledger.jsonl": "5" * 40,
    ".campaign/jobs/L1.sh": "6" * 40,
}


def test_a_directory_digest_changes_with_its_files_and_only_with_them() -> None:
    base = reached(["configs"], BLOBS)
    assert list(base) == ["configs/"]
    assert reached(["configs"], {**BLOBS, "configs/b.yaml": "7" * 40}) != base
    assert reached(["configs"], {**BLOBS, "configs/c.yaml": "7" * 40}) != base
    assert reached(["configs"], {**BLOBS, "manifests/m.yaml": "7" * 40}) == base
    # The whole campaign: the runner's own files and the skipped ones (the manifest) do not count.
    whole = reached([""], BLOBS, skip={"manifests/m.yaml"})
    assert list(whole) == [ROOT_KEY]
    for rel in ("STATUS.md", ".campaign/ledger.jsonl", ".campaign/jobs/L1.sh", "manifests/m.yaml"):
        assert reached([""], {**BLOBS, rel: "8" * 40}, skip={"manifests/m.yaml"}) == whole
    assert reached([""], {**BLOBS, "README.md": "8" * 40}, skip={"manifests/m.yaml"}) != whole


def test_a_directory_without_committed_files_adds_nothing() -> None:
    """An output directory a command names exists after the smoke, not before: its fingerprint
    must be the same both times."""
    assert reached(["runs/smoke/x", "data"], BLOBS) == {}


def test_outermost_drops_directories_inside_another() -> None:
    assert outermost(["configs/a", "configs", "scripts/x", "scripts/xy"]) == (
        "configs",
        "scripts/x",
        "scripts/xy",
    )
    assert outermost(["configs", ""]) == ("",)
