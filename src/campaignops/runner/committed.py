"""The committed gate: what a job runs is what HEAD holds, byte for byte (docs/runner.md, "The
committed gate"). A pure function of the facts ``gitfacts.repo_facts`` reads."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence

from campaignops.core import layout
from campaignops.model.policy import Policy
from campaignops.runner.gitfacts import RepoFacts
from campaignops.runner.verdict import MAX_LISTED, Verdict
from campaignops.runner.verdict import listed as _listed
from campaignops.runner.verdict import ok as _ok
from campaignops.runner.verdict import quoted as _quoted
from campaignops.runner.verdict import refuse as _refuse

GATE = "committed"

# What the runner itself rewrites between submissions: never a reason to refuse one.
BOOKKEEPING = layout.RUNNER_FILES
# Ignored files here may be what a job runs (a new manifest, queue or script): refuse them even
# when a committed rule ignores them.
WATCHED_DIRS = ("manifests", "queues", "scripts")
WATCHED_KINDS = (layout.MANIFEST, layout.QUEUE, layout.WRAPPER)
# Ignored, yet no reason to refuse: caches tools derive from the committed sources.
DERIVED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ipynb_checkpoints"})
DERIVED_SUFFIXES = (".pyc", ".pyo", ".DS_Store")
# A fresh campaign has no remote: pushing needs one first, or the campaign stays local.
NO_REMOTE_HINT = (
    "this repository has no remote to push to: add one and push ({push}), or keep the "
    "campaign local: set require_pushed: false in campaign.yaml and commit it"
)


def _watched(rel: str, globs: Mapping[str, tuple[str, ...]]) -> bool:
    top = rel.split("/", 1)[0]
    patterns = [g for kind in WATCHED_KINDS for g in globs.get(kind, ())]
    return ("/" in rel and top in WATCHED_DIRS) or layout.matches(rel, patterns)


def _flag_hint(flagged: Mapping[str, str]) -> str:
    by_kind: dict[str, list[str]] = {}
    for path, kind in flagged.items():
        by_kind.setdefault(kind, []).append(path)
    clear = " && ".join(
        f"git update-index --no-{kind} {_quoted(paths)}" for kind, paths in sorted(by_kind.items())
    )
    return f"{clear}, then commit or restore the files (git status shows them again)"


def _trick(facts: RepoFacts, paths: Sequence[str]) -> Verdict | None:
    """The refusals git status cannot give: content that is not HEAD's although status is
    clean (a symlink out of the repository, an index bit, an ignored or excluded file)."""
    gate = "committed"
    outside = {p: facts.outside[p] for p in paths if p in facts.outside}
    if outside:
        links = _listed(
            f"{p} -> {t}" if p == link else f"{p} (through {link} -> {t})"
            for p, (link, t) in outside.items()
        )
        link = shlex.quote(outside[min(outside)][0])
        return _refuse(
            gate,
            f"symlink leading out of the repository: {links}; what it reads is in no commit",
            f"replace the symlink with a copy of what it points to (cp -RL {link} {link}.copy "
            f"&& rm {link} && mv {link}.copy {link}), then git add {link} && git commit; name "
            "data outside the campaign by its absolute path in the command instead",
        )
    flagged = {p: k for p, k in facts.flagged.items() if p not in BOOKKEEPING}
    if flagged:
        marks = _listed(f"{p} ({k})" for p, k in flagged.items())
        return _refuse(
            gate,
            f"git status cannot see changes to {marks}: its index entry says so",
            _flag_hint(flagged),
        )
    ruled = {p: facts.rules[p] for p in paths if p in facts.rules}
    if ruled:
        return _refuse(
            gate,
            f"ignored by git, so never committed: {_listed(f'{p} ({r})' for p, r in ruled.items())}",
            "un-ignore it (drop or narrow that rule, or add a !rule after it), then git add "
            f"{_quoted(ruled)} && git commit",
        )
    return None


def _derived(rel: str) -> bool:
    return bool(DERIVED_DIRS.intersection(rel.split("/"))) or rel.endswith(DERIVED_SUFFIXES)


def _hidden(facts: RepoFacts, policy: Policy) -> Verdict | None:
    hidden = sorted(
        p for p in facts.ignored if _watched(p.rstrip("/"), policy.globs) and not _derived(p)
    )
    if not hidden:
        return None
    return _refuse(
        "committed",
        f"ignored or excluded under {', '.join(d + '/' for d in WATCHED_DIRS)}: "
        f"{_listed(hidden)} (a job may run them; git status does not show them)",
        "commit them (drop the rule in .gitignore or .git/info/exclude, then git add "
        f"{_quoted(hidden)} && git commit) or move them out of the campaign",
    )


def _add(paths: Sequence[str]) -> str:
    """``git add PATHS`` for a few paths; for many, where to see them all."""
    if len(paths) <= MAX_LISTED:
        return f"git add {_quoted(paths)}"
    return "git add them (git status --untracked-files=all --ignored lists them all)"


def _untracked(facts: RepoFacts) -> Verdict | None:
    """Untracked files anywhere in the campaign, the runner's own apart: a glob, a brace, a
    variable, a directory argument or ``bash -c '…'`` reach files no command word names, so
    the whole checkout must be what HEAD holds."""
    untracked = sorted(p for p in facts.untracked if not layout.runner_written(p))
    if untracked:
        return _refuse(
            "committed",
            f"untracked in the campaign: {_listed(untracked)} (a job can read any file "
            "of the checkout, through a glob, a directory or a variable; no commit holds these)",
            f"commit them ({_add(untracked)} && git commit), or remove them; outputs belong "
            "under runs/ (the runner's), or under a directory the committed .gitignore ignores",
        )
    return None


def _local(facts: RepoFacts) -> Verdict | None:
    """Ignored files that only a rule outside HEAD hides (.git/info/exclude, a global excludes
    file), bytecode caches and the runner's own apart: the commit does not say they are no
    source, and a job can read them as well as an untracked file."""
    local = {
        p: rule
        for p, rule in facts.local_rules.items()
        if not layout.runner_written(p) and not _derived(p)
    }
    if local:
        return _refuse(
            "committed",
            "ignored only by a rule HEAD does not hold: "
            f"{_listed(f'{p} ({r})' for p, r in local.items())} (a job can read them; no "
            "clone has them, and no review sees the rule)",
            "if they are outputs or caches, move the rule into the campaign's .gitignore and "
            "commit it (git add .gitignore && git commit); else commit them "
            f"({_add(sorted(local))} && git commit) or remove them",
        )
    return None


def _repository(facts: RepoFacts) -> Verdict | None:
    """Refused: no repository, or no commit yet."""
    if not facts.is_repo:
        return _refuse(
            GATE,
            "the campaign is not inside a git repository",
            "git init && git add -A && git commit -m 'campaign'",
        )
    if facts.head is None:
        return _refuse(GATE, "the repository has no commit yet", "git add -A && git commit")
    return None


def _missing(facts: RepoFacts, paths: Sequence[str]) -> Verdict | None:
    missing = [p for p in paths if p not in facts.tracked]
    if missing:
        return _refuse(
            GATE,
            f"not committed: {_listed(missing)}",
            f"commit: git add {_quoted(missing)} && git commit",
        )
    return None


def _changed(facts: RepoFacts) -> Verdict | None:
    """Tracked files that differ from HEAD: converted on the way in, changed behind git
    status's back (size and time kept), or plainly uncommitted."""
    converted = sorted(facts.converted - BOOKKEEPING)
    if converted:
        one = len(converted) == 1
        return _refuse(
            GATE,
            f"{_listed(converted)} {'differs' if one else 'differ'} from HEAD byte for byte, "
            f"though git status calls {'it' if one else 'them'} clean: git converts "
            f"{'it' if one else 'them'} on the way in (line endings, a clean filter)",
            f"write HEAD's bytes back (rm {_quoted(converted)} && git checkout -- "
            f"{_quoted(converted)}); if the job should run these bytes, turn the conversion "
            "off for them in .gitattributes (-text) and commit them",
        )
    unseen = sorted(facts.unseen - BOOKKEEPING)
    if unseen:
        it, its = ("it", "its") if len(unseen) == 1 else ("them", "their")
        return _refuse(
            GATE,
            f"{_listed(unseen)} changed since HEAD, though git status calls {it} clean (it "
            f"trusts {its} unchanged size and modification time)",
            f"touch {_quoted(unseen)} so that git reads {it} again, then commit (git add "
            f"{_quoted(unseen)} && git commit) or restore HEAD's (git restore {_quoted(unseen)})",
        )
    dirty = sorted(facts.dirty - BOOKKEEPING)
    if dirty:
        verb = "has" if len(dirty) == 1 else "have"
        return _refuse(
            GATE,
            f"{_listed(dirty)} {verb} uncommitted changes",
            f"commit {'it' if len(dirty) == 1 else 'them'}: git add {_quoted(dirty)} && git commit "
            "(or discard with git restore), then submit again",
        )
    return None


def _pushed(facts: RepoFacts, policy: Policy) -> Verdict:
    """HEAD holds every file; with require_pushed, HEAD is also on the branch's upstream."""
    short = (facts.head or "")[:12]
    if not policy.require_pushed:
        return _ok(GATE, f"HEAD {short} holds every file submitted")
    if facts.branch is None:
        return _refuse(
            GATE,
            f"HEAD {short} is detached and campaign.yaml has require_pushed",
            "check out a branch (git switch -c NAME), then: " + _push(facts, "NAME"),
        )
    if facts.upstream is None:
        return _refuse(
            GATE,
            f"branch {facts.branch} has no upstream and campaign.yaml has require_pushed",
            _push(facts, shlex.quote(facts.branch)),
        )
    if not facts.upstream_contains_head:
        return _refuse(
            GATE,
            f"HEAD {short} is not on {facts.upstream} (require_pushed in campaign.yaml)",
            "git push, then submit again",
        )
    return _ok(GATE, f"HEAD {short} is committed and on {facts.upstream}")


def committed(facts: RepoFacts, *, paths: Sequence[str], policy: Policy) -> Verdict:
    """What is submitted is what HEAD holds, byte for byte: the files named (manifest, policy,
    wrappers, configs, every file the commands name) are in HEAD and identical to it, none
    through a symlink out of the repository, none with an index bit that hides its changes;
    no other tracked file differs from HEAD and no file is untracked (a job can read the whole
    checkout), no file is ignored by a rule HEAD does not hold, none is ignored under
    manifests/, queues/, scripts/; the runner's own files apart. With require_pushed, HEAD is
    pushed. The first refusal, in that order, is the verdict."""
    named = list(dict.fromkeys(paths))
    checks: tuple[Callable[[], Verdict | None], ...] = (
        lambda: _repository(facts),
        lambda: _trick(facts, named),
        lambda: _missing(facts, named),
        lambda: _changed(facts),
        lambda: _untracked(facts),
        lambda: _hidden(facts, policy),
        lambda: _local(facts),
    )
    for check in checks:
        verdict = check()
        if verdict is not None:
            return verdict
    return _pushed(facts, policy)


def _push(facts: RepoFacts, branch: str) -> str:
    """The command that gives ``branch`` an upstream: on origin, else the only remote there is;
    with no remote at all, how to add one or to stop requiring a push."""
    if not facts.remotes:
        return NO_REMOTE_HINT.format(
            push=f"git remote add origin URL && git push -u origin {branch}"
        )
    remote = "origin" if "origin" in facts.remotes else facts.remotes[0]
    if len(facts.remotes) > 1 and remote != "origin":
        remote = "REMOTE"  # several remotes, none called origin: the user knows which is shared
    return f"git push -u {shlex.quote(remote)} {branch}"
