"""A versionable template source: the packaged template as a tagged git repository.

`copier update` regenerates the template at the campaign's recorded ref (`_commit`) from its
recorded source (`_src_path`), so both must be a git repository that still holds that ref. The
installed package's template directory is neither, so `campaign new` first commits the packaged
template (copier.yml and template/, nothing else) into a per-user cache repository, one commit
per distinct content, tagged with the package version (`v0.1.0`). The same version with other
content (a development install) gets the tag `v0.1.0+<tree>`, the git tree id's first 12
characters, a PEP 440 local version. Tags are never moved or deleted, so every campaign's old
ref stays; a newer campaignops adds its own commit and tag on top.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from campaignops.core.errors import CampaignError

CACHE_ENV = "CAMPAIGNOPS_TEMPLATE_CACHE"
# What the template is: everything else in a source checkout (src/, tests/) is not.
CONTENT = ("copier.yml", "template")
EXCLUDED = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "campaignops",
    "GIT_AUTHOR_EMAIL": "campaignops@localhost",
    "GIT_COMMITTER_NAME": "campaignops",
    "GIT_COMMITTER_EMAIL": "campaignops@localhost",
}
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?")


@dataclass(frozen=True)
class Source:
    """Where copier reads the template (``url``, as recorded in _src_path) and at which tag."""

    url: str
    path: Path
    tag: str


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$CAMPAIGNOPS_TEMPLATE_CACHE``, else ``$XDG_CACHE_HOME/campaignops/template``, else
    ``~/.cache/campaignops/template``."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser().absolute()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser().absolute() / "campaignops" / "template"


def recorded_url(path: Path) -> str:
    """The cache path as `.copier-answers.yml` records it: under the home directory as
    ``~/…``, which copier expands, so a clone of the campaign by another user on another
    machine still points at that user's own cache."""
    with contextlib.suppress(ValueError):
        return "~/" + path.relative_to(Path.home()).as_posix()
    return str(path)


def tag_for(version: str) -> str:
    """The plain tag of a package version (``0.1.0`` → ``v0.1.0``); a local part is dropped."""
    public = version.split("+", 1)[0]
    if not _VERSION.fullmatch(public):
        raise CampaignError(
            message=f"campaignops version {version!r} is not a PEP 440 release",
            hint="install a released campaignops, or a checkout whose version is X.Y.Z",
        )
    return f"v{public}"


def _git(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, work_tree: Path | None = None
) -> str:
    full_env = {**os.environ, **_IDENTITY, **(env or {})}
    # With another work tree, git runs there (pathspecs are relative to it) on the cache's .git.
    where = (
        ["-C", str(repo)]
        if work_tree is None
        else ["-C", str(work_tree), f"--git-dir={repo / '.git'}", f"--work-tree={work_tree}"]
    )
    done = subprocess.run(
        ["git", *where, *args],
        capture_output=True,
        text=True,
        env=full_env,
        check=False,
    )
    if done.returncode != 0:
        raise CampaignError(
            message=f"git {args[0]} failed in the template cache {repo}: "
            f"{(done.stderr or done.stdout).strip()[:300]}",
            hint=f"remove {repo} (it is only a cache: campaign new rebuilds it), or point "
            f"{CACHE_ENV} at a directory you may write to",
        )
    return done.stdout.strip()


def _tag_tree(repo: Path, tag: str) -> str | None:
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{tree}}")
    except CampaignError:
        return None


@contextlib.contextmanager
def _locked(repo: Path) -> Iterator[None]:
    """One writer at a time: two `campaign new` runs may fill the cache at once."""
    repo.parent.mkdir(parents=True, exist_ok=True)
    with (repo.parent / f".{repo.name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tree_of(repo: Path, root: Path) -> str:
    """The git tree id of ``root``'s template content, staged through a private index."""
    with tempfile.TemporaryDirectory(prefix="campaignops-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "add", "--force", "--", *CONTENT, *EXCLUDED, env=env, work_tree=root)
        return _git(repo, "write-tree", env=env)


def ensure(*, root: Path, version: str, cache: Path | None = None) -> Source:
    """The cache repository holding ``root``'s template, tagged for ``version`` (added now if
    the cache lacks this content). Idempotent: the same content gives the same tag."""
    repo = cache if cache is not None else cache_dir()
    missing = [name for name in CONTENT if not (root / name).exists()]
    if missing:
        raise CampaignError(
            message=f"the template at {root} lacks {', '.join(missing)}",
            hint="reinstall campaignops (pip install --force-reinstall campaignops)",
        )
    plain = tag_for(version)
    with _locked(repo):
        if not (repo / ".git").is_dir():
            repo.mkdir(parents=True, exist_ok=True)
            _git(repo, "init", "--quiet", "--initial-branch=main")
        tree = _tree_of(repo, root)
        existing = _tag_tree(repo, plain)
        if existing is None:
            tag = plain
        elif existing == tree:
            return Source(url=recorded_url(repo), path=repo, tag=plain)
        else:
            tag = f"{plain}+{tree[:12]}"
            if _tag_tree(repo, tag) == tree:
                return Source(url=recorded_url(repo), path=repo, tag=tag)
        parent = _git(repo, "rev-parse", "HEAD^{commit}") if _has_head(repo) else None
        message = f"campaignops template {tag.removeprefix('v')}\n\nfrom {root}\n"
        commit = _git(repo, "commit-tree", tree, *(("-p", parent) if parent else ()), "-m", message)
        _git(repo, "tag", tag, commit)
        _git(repo, "update-ref", "refs/heads/main", commit)
        _git(repo, "reset", "--quiet", "--hard", "main")
    return Source(url=recorded_url(repo), path=repo, tag=tag)


def _has_head(repo: Path) -> bool:
    try:
        _git(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except CampaignError:
        return False
    return True


def tags(repo: Path) -> tuple[str, ...]:
    """The cache's tags, oldest commit first."""
    if not (repo / ".git").is_dir():
        return ()
    listed = _git(repo, "tag", "--list", "--sort=creatordate")
    return tuple(line for line in listed.splitlines() if line)
