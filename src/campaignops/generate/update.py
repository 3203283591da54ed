"""`campaign update`: bring a campaign to a newer template with copier, then re-render its views.

Copier regenerates the template at the campaign's recorded ref (`_commit` of
`.copier-answers.yml`, from `_src_path`), diffs that against the campaign, renders the new ref
and re-applies the campaign's own changes (a 3-way merge: conflicts become inline markers).
Files in copier.yml's `_skip_if_exists` (policy, local catalog, ledger, lessons, status,
manifests, queues, configs) are never touched. Nothing is committed: the user reviews the diff.
With ``dry_run`` the same runs in a scratch clone of the repository, which is then deleted.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.checks import leftovers
from campaignops.core import yamldoc
from campaignops.core.errors import CampaignError, InputError, UsageError
from campaignops.generate import template_source
from campaignops.views import render as views

ANSWERS_FILE = ".copier-answers.yml"


@dataclass(frozen=True)
class Outcome:
    old: str
    new: str
    source: str
    changed: tuple[tuple[str, str], ...]  # (git status code, path), paths relative to the campaign
    conflicts: tuple[tuple[str, int], ...]  # (path, line of the first marker)
    rejects: tuple[str, ...]
    rendered: tuple[str, ...]
    render_problem: str | None
    dry_run: bool

    @property
    def clean(self) -> bool:
        return not self.conflicts and not self.rejects and self.render_problem is None


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise UsageError(
            message=f"git {args[0]} failed in {cwd}: {done.stderr.strip()[:300]}",
            hint="campaign update needs the campaign to be a git repository",
        )
    return done.stdout


def answers(root: Path) -> Mapping[str, Any]:
    """The campaign's copier answers; UsageError when it has none (a cookiecutter campaign)."""
    path = root / ANSWERS_FILE
    if not path.is_file():
        raise UsageError(
            message=f"{root} has no {ANSWERS_FILE}: it was not generated with copier (cookiecutter "
            "records no template source), so there is nothing to update from",
            hint="generate a fresh campaign with `campaign new DIR --engine copier` and the same "
            "answers, move your own files (campaign.yaml, manifests/, queues/, configs/, "
            "failures.local.yaml, LESSONS.md, .campaign/) into it, and update that one from now on",
        )
    data = yamldoc.load(path.read_text(encoding="utf-8"), path=ANSWERS_FILE)
    if not isinstance(data, Mapping) or not data.get("_src_path") or not data.get("_commit"):
        raise UsageError(
            message=f"{ANSWERS_FILE} lacks _src_path or _commit: copier cannot find the template "
            "version this campaign was made from",
            hint="restore the file from git (it is copier's record: never edit it by hand)",
        )
    return data


def _dirty(root: Path) -> list[str]:
    return [line for line in _git(root, "status", "--porcelain", "--", ".").splitlines() if line]


def _target(src: str, to: str | None) -> str | None:
    """The ref to update to: ``to`` as a tag (``0.2.0`` → ``v0.2.0``); else, for the packaged
    template's cache, this installation's tag (added to the cache now); else copier's default,
    the source's latest PEP 440 tag."""
    own = None
    local = Path(src).expanduser()
    if local.absolute() == template_source.cache_dir():
        from campaignops import __version__
        from campaignops.generate import new as scaffold

        own = template_source.ensure(
            root=scaffold.template_root(), version=__version__, cache=local.absolute()
        ).tag
    if to is not None:
        return to if to.startswith("v") or not to[:1].isdigit() else f"v{to}"
    return own


def _require_old_ref(src: str, old: str) -> None:
    """A local template repository must still hold the campaign's ref, else copier's own error
    ("cannot obtain old template references") would be all the user sees."""
    local = Path(src).expanduser()
    if not local.is_dir():
        if "://" in src or src.startswith(("git@", "gh:", "gl:")):
            return
        raise UsageError(
            message=f"the template source {src} recorded in {ANSWERS_FILE} does not exist here",
            hint=_old_ref_hint(old),
        )
    found = subprocess.run(
        ["git", "-C", str(local), "rev-parse", "--verify", "--quiet", f"{old}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if found.returncode != 0:
        raise UsageError(
            message=f"the template source {src} lacks {old}, the version this campaign was "
            "generated from",
            hint=_old_ref_hint(old),
        )


def _old_ref_hint(old: str) -> str:
    return (
        f"with campaignops {old.removeprefix('v').split('+')[0]} installed (e.g. in a scratch "
        "virtualenv), run `campaign new SCRATCH_DIR --defaults` once: it adds that version to "
        "your template cache; then run campaign update again"
    )


@contextlib.contextmanager
def _workspace(root: Path, dry_run: bool) -> Iterator[Path]:
    """The campaign itself, or (dry run) the same campaign in a scratch clone of its repository."""
    if not dry_run:
        yield root
        return
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    sub = root.resolve().relative_to(top.resolve())
    scratch = Path(tempfile.mkdtemp(prefix="campaign-update-"))
    try:
        _git(scratch, "clone", "--quiet", "--no-hardlinks", str(top), "repo")
        yield scratch / "repo" / sub
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _copier_update(work: Path, target: str | None) -> None:
    import copier

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            copier.run_update(
                str(work),
                vcs_ref=target,
                defaults=True,
                overwrite=True,
                conflict="inline",
                quiet=True,
                unsafe=False,
            )
    except Exception as exc:  # copier's own refusals (downgrade, unknown ref, unsafe template)
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise CampaignError(
            message=f"copier update failed: {text}",
            hint="check --to (a tag of the template source) and the template source in "
            f"{ANSWERS_FILE}; the campaign is unchanged unless git status says otherwise",
        ) from None


def _changed(work: Path) -> tuple[tuple[str, str], ...]:
    rows = []
    for line in _git(
        work, "status", "--porcelain", "--untracked-files=all", "--", "."
    ).splitlines():
        code, path = line[:2].strip(), line[3:]
        if " -> " in path:
            path = path.split(" -> ", 1)[1]
        rel = os.path.relpath(Path(_git(work, "rev-parse", "--show-toplevel").strip()) / path, work)
        rows.append((code, rel))
    return tuple(rows)


def run(
    root: Path,
    *,
    to: str | None = None,
    dry_run: bool = False,
    step: Callable[[str], None] = lambda _: None,
) -> Outcome:
    """Update the campaign at ``root``; see the module docstring. ``step`` is told each step
    as it starts (the CLI shows it on a terminal)."""
    recorded = answers(root)
    dirty = _dirty(root)
    if dirty:
        shown = "; ".join(line[3:] for line in dirty[:5]) + ("; …" if len(dirty) > 5 else "")
        raise UsageError(
            message=f"the working tree has uncommitted changes ({shown})",
            hint="commit or discard them first: campaign update changes files for you to review "
            "and commit, and must not mix with your own edits",
        )
    src, old = str(recorded["_src_path"]), str(recorded["_commit"])
    step(f"reading the template source {src} (this campaign is at {old})")
    _require_old_ref(src, old)
    target = _target(src, to)
    with _workspace(root, dry_run) as work:
        step(
            f"copier update to {target or 'the latest tag'}"
            + (" in a scratch clone" if dry_run else "")
        )
        _copier_update(work, target)
        step("re-rendering the views")
        rendered: tuple[str, ...] = ()
        problem = None
        try:
            rendered = tuple(views.render_all(root=work, write=True))
        except InputError as exc:  # conflict markers in a view's source or block
            problem = f"{exc.path}: {exc.message}" if exc.path else exc.message
        changed = _changed(work)
        conflicts = []
        for code, rel in changed:
            path = work / rel
            if code != "D" and path.is_file() and not rel.endswith(".rej"):
                lines = leftovers.conflicts(path.read_bytes())
                if lines:
                    conflicts.append((rel, lines[0]))
        new = str(answers(work).get("_commit"))
    return Outcome(
        old=old,
        new=new,
        source=src,
        changed=changed,
        conflicts=tuple(conflicts),
        rejects=tuple(rel for _, rel in changed if rel.endswith(".rej")),
        rendered=rendered,
        render_problem=problem,
        dry_run=dry_run,
    )
