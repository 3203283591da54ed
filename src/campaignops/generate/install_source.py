"""Where a campaign's CI and pre-commit hook install campaignops from: a pinned requirement.

`campaign new` records it as the ``campaignops_requirement`` answer; the generated workflows,
`.gitlab-ci.yml` and `.pre-commit-config.yaml` install exactly that. It is pinned so a campaign's
checks do not change under it: the release that generated the campaign (``campaignops==X.Y.Z``),
or a git URL at a tag or commit (``campaignops @ git+URL@REF``) when the tool came from a
repository rather than an index.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit

from campaignops import __version__
from campaignops.core.errors import UsageError
from campaignops.generate import answers as answers_mod

NAME = "campaignops"
ENV = "CAMPAIGNOPS_SOURCE"  # the same as --source, for scripts that make many campaigns
_SCHEMES = ("https", "http", "ssh", "file")


def released(version: str = __version__) -> str:
    """The requirement for a release on a package index."""
    return f"{NAME}=={version}"


# No release tag is published, so a default REF (``v<version>``) would name a tag that does not
# exist and CI's pip install would fail on it (docs/decisions.md, 130): REF is required.
NO_REF = (
    "--source {source!r} names no tag or commit: CI installs campaignops at exactly the REF "
    "given, and there is no default (no release tag is published)"
)
NO_REF_HINT = (
    "append @REF, a tag or commit of that repository: --source {url}@COMMIT (in a checkout of "
    "it: git rev-parse HEAD; its tags: git ls-remote --tags {url})"
)


def from_source(source: str) -> str:
    """``campaignops @ git+URL@REF`` from ``--source URL@REF``; REF (a tag or commit) is required.

    URL may carry ``git+`` or not, and may be a local path (made a ``file://`` URL). The ref is
    what follows the last ``@`` after the URL's last ``/``, so ``ssh://git@host/r.git`` has none.
    """
    text = source.strip()
    if not text:
        raise UsageError(message="--source is empty", hint="give a git URL and a REF: URL@COMMIT")
    if re.match(r"^[\w.-]+@[\w.-]+:", text) and "://" not in text:
        raise UsageError(
            message=f"--source {source!r}: scp-like git addresses are not URLs pip accepts",
            hint="write it as ssh://USER@HOST/PATH (e.g. ssh://git@github.com/org/repo.git)",
        )
    url, ref = text, ""
    if text.rfind("@") > text.rfind("/"):
        url, _, ref = text.rpartition("@")
    url = url.removeprefix("git+")
    if "://" not in url:
        url = local_url(Path(url))
    scheme = urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise UsageError(
            message=f"--source {source!r}: scheme {scheme!r} is not one pip installs git from",
            hint="use an https://, ssh:// or file:// URL, or a local path",
        )
    if not ref:
        raise UsageError(
            message=NO_REF.format(source=source), hint=NO_REF_HINT.format(url=text.rstrip("@"))
        )
    requirement = check(f"{NAME} @ git+{url}@{ref}", given=f"--source {source!r}")
    if scheme == "file":
        _resolvable(Path(unquote(urlsplit(url).path)), ref, source=source)
    return requirement


# A source on this machine is checked before anything is rendered: a path that holds no git
# repository, or a REF it does not have, is what CI's (and anyone's) pip install fails on.
NOT_A_REPOSITORY = "--source {source!r}: {path} is no git repository ({why})"
NO_SUCH_REF = "--source {source!r}: {path} has no tag or commit {ref!r}"
LOCAL_HINT = (
    "name a commit or tag it has: git -C {path} rev-parse HEAD (its current commit), "
    "git -C {path} tag --list (its tags)"
)


def _resolvable(path: Path, ref: str, *, source: str) -> None:
    """Refuse (UsageError, exit 2) a local repository ``path`` that does not resolve ``ref``."""

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(
                ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None  # no git to ask: campaign new itself stops at its git init

    hint = LOCAL_HINT.format(path=shlex.quote(str(path)))
    inside = git("rev-parse", "--git-dir")
    if inside is not None and inside.returncode != 0:
        why = (inside.stderr.strip().splitlines() or ["git rev-parse failed"])[-1]
        raise UsageError(
            message=NOT_A_REPOSITORY.format(source=source, path=path, why=why), hint=hint
        )
    found = git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if found is not None and found.returncode != 0:
        raise UsageError(message=NO_SUCH_REF.format(source=source, path=path, ref=ref), hint=hint)


def local_url(path: Path) -> str:
    """``file://localhost/ABS/PATH``: pip before 23.3 refuses a direct URL without a host
    (``git+file:///…``: "Invalid requirement"), and git reads localhost as this machine."""
    return "file://localhost" + path.expanduser().resolve().as_uri().removeprefix("file://")


def from_installation(version: str = __version__) -> str:
    """The requirement that reproduces this installation, when it can be reproduced elsewhere.

    pip records a VCS install's URL and commit in ``direct_url.json`` (PEP 610): a campaign made
    by a tool installed from a shared repository pins that commit; so does one made by an
    editable install of a git checkout whose ``origin`` is shared (https or ssh). Anything
    else (a repository on this machine only) is not reachable from CI: the release of the same
    version.
    """
    from importlib import metadata

    try:
        raw = metadata.distribution(NAME).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        raw = None
    try:
        info = json.loads(raw) if raw else {}
    except ValueError:
        info = {}
    vcs = info.get("vcs_info") if isinstance(info, dict) else None
    url = str(info.get("url", "")) if isinstance(info, dict) else ""
    shared = urlsplit(url).scheme in ("https", "http", "ssh")
    if shared and isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id"):
        candidate = f"{NAME} @ git+{url}@{vcs['commit_id']}"
        if not answers_mod.validate_one("campaignops_requirement", candidate):
            return candidate
    dir_info = info.get("dir_info") if isinstance(info, dict) else None
    if isinstance(dir_info, dict) and dir_info.get("editable") and url.startswith("file://"):
        pinned = _checkout(Path(urlsplit(url).path))
        if pinned is not None:
            return pinned
    return released(version)


def _checkout(path: Path) -> str | None:
    """An editable install from a git checkout of a shared repository (a clone of GitHub's, say):
    that repository at the checkout's commit, which CI can fetch once it is pushed. None for a
    checkout without a shared ``origin`` (CI could not reach it)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    origin, commit = git("remote", "get-url", "origin"), git("rev-parse", "HEAD")
    if not origin or not commit or urlsplit(origin).scheme not in ("https", "http", "ssh"):
        return None
    candidate = f"{NAME} @ git+{origin}@{commit}"
    return None if answers_mod.validate_one("campaignops_requirement", candidate) else candidate


def check(requirement: str, *, given: str = "campaignops_requirement") -> str:
    """``requirement`` if it follows the template's rule (and pip's grammar); else a UsageError."""
    message = answers_mod.validate_one("campaignops_requirement", requirement)
    if message is None:
        message = _pip_refusal(requirement)
    if message is not None:
        raise UsageError(
            message=f"{given}: {message} (got {requirement!r})",
            hint="e.g. --source https://github.com/ORG/campaignops.git@COMMIT, or "
            f"--data campaignops_requirement=campaignops=={__version__}",
        )
    return requirement


def _pip_refusal(requirement: str) -> str | None:
    """What pip's own parser says (packaging comes with the generation extra); None if fine."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # the rule's pattern is a strict subset of PEP 508 (tested)
        return None
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement as exc:
        return f"not a requirement pip accepts: {exc}"
    if parsed.name != NAME:
        return f"names {parsed.name!r}, not {NAME}"
    return None
