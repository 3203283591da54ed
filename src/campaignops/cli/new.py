"""`campaign new`: a campaign repository from the template."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TextIO

from campaignops.cli import contract
from campaignops.cli.live import Live
from campaignops.core import layout, safetext
from campaignops.core.errors import UsageError


def _new(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.generate import new as scaffold

    scaffold.require_engine(args.engine)
    directory = Path(layout.guard_length(args.directory)).resolve()
    given = scaffold.parse_data(args.data)
    given[REQUIREMENT] = _requirement(args, given)

    def ask(question: object, default: str) -> str:
        from campaignops.generate.answers import Question

        assert isinstance(question, Question)
        if args.defaults:
            return default
        # A question would print on stdout, where --format json promises one document only.
        if args.format == "json" or not scaffold.environment_ok():
            raise UsageError(
                message=f"no terminal to ask {question.name!r} on",
                hint="pass --defaults, and --data NAME=VALUE for the answers you want",
            )
        choices = f" [{'/'.join(question.choices)}]" if question.choices else ""
        reply = input(f"{question.help}{choices} ({default}): ").strip()
        return reply or default

    answers = scaffold.resolve_answers(directory=directory, given=given, ask=ask)
    if args.dry_run:
        return _would_make(args, out, directory, answers)
    live = Live(err)  # each step on a terminal, cleared once done; nothing in a log
    made = scaffold.generate(
        directory=directory,
        answers=answers,
        engine=args.engine,
        template=args.template,
        vcs_ref=args.vcs_ref,
        step=lambda text: live.show([f"campaign new: {text} …"]),
    )
    live.show([])
    shown = os.path.relpath(made.path, Path.cwd())
    if shown.startswith(".."):
        shown = str(made.path)
    recorded = made.answers[REQUIREMENT]
    notes = []
    if recorded.startswith("campaignops=="):
        notes.append(FROM_INDEX_NOTE.format(requirement=recorded))
    elif "git+file:" in recorded:
        notes.append(ON_THIS_MACHINE_NOTE)
    notes.append(HOOK_NOTE)
    pushed = made.answers["require_pushed"] == "yes"
    notes.append(PUSH_REQUIRED if pushed else PUSH_NOT_REQUIRED)
    steps = (
        f"cd {shown}",
        "pre-commit install          # the checks on every commit",
        "campaign check              # policy, manifests, stamps, line endings, wrappers, views",
        *((PUSH_STEP,) if pushed else ()),
        "campaign submit manifests/example.yaml --stage smoke --dry-run",
    )
    if args.format == "json":
        doc = {
            "dry_run": False,
            "path": str(made.path),
            "engine": made.engine,
            "commit": made.commit,
            "requirement": recorded,
            "notes": notes,
            "next": [step.split("  #")[0].strip() for step in steps],
        }
        contract.emit(out, args.command_name, doc)
        return 0
    print(f"Created {shown} with {made.engine} (first commit {made.commit[:10]}).", file=out)
    print(f"CI installs: {recorded}", file=out)
    for note in notes:
        print(note, file=out)
    print("Next:", file=out)
    for step in steps:
        print(f"  {step}", file=out)
    return 0


def _would_make(
    args: argparse.Namespace, out: TextIO, directory: Path, answers: dict[str, str]
) -> int:
    """--dry-run: the directory, engine and answers a run would use; nothing is made."""
    if args.format == "json":
        doc = {"dry_run": True, "path": str(directory), "engine": args.engine, "answers": answers}
        contract.emit(out, args.command_name, doc)
        return 0
    print(f"dry run: nothing created; would create {directory} with {args.engine}:", file=out)
    for name, value in answers.items():
        print(safetext.plain_line(f"  {name}: {value}"), file=out)
    return 0


# The new repository has no remote (docs/decisions.md, 127): say what require_pushed means here.
PUSH_NOT_REQUIRED = (
    "require_pushed: no (the campaign has no remote yet); once it has its shared remote, set "
    "require_pushed: true in campaign.yaml so that every submit is of a pushed commit."
)
PUSH_REQUIRED = (
    "require_pushed: yes, and the campaign has no remote yet: submits are refused until HEAD is "
    "pushed (or until require_pushed: false in campaign.yaml)."
)
# A pinned release comes from the package index, and campaignops has published none yet: say
# what CI will fail on, and what to record instead (issue 20; docs/template.md).
FROM_INDEX_NOTE = (
    "note: CI will pip-install {requirement} from the package index, and fail if that version "
    "is not published there; to install from a repository CI can reach instead, make the "
    "campaign with --source URL@COMMIT (or edit CAMPAIGNOPS_REQUIREMENT in the CI files)."
)
# A path checked here (install_source) exists on this machine only.
ON_THIS_MACHINE_NOTE = (
    "note: that repository is a path on this machine: CI on another machine (GitHub, GitLab) "
    "cannot reach it; for a shared CI, make the campaign with --source URL@COMMIT of a "
    "repository it can reach (or edit CAMPAIGNOPS_REQUIREMENT in the CI files)."
)
# The campaign-check hook is `language: system` (docs/decisions.md, 131): it needs no index.
HOOK_NOTE = (
    "The pre-commit hook runs the campaign on PATH (this one: nothing to download); install it "
    "wherever you commit."
)
PUSH_STEP = "git remote add origin URL && git push -u origin HEAD   # URL: the shared repository"


REQUIREMENT = "campaignops_requirement"


def _requirement(args: argparse.Namespace, given: dict[str, str]) -> str:
    """The pinned install source: --data, else --source / $CAMPAIGNOPS_SOURCE, else this
    installation (its git commit when installed from a repository, else its release)."""
    from campaignops.generate import answers as answers_mod
    from campaignops.generate import install_source

    source = args.source if args.source is not None else os.environ.get(install_source.ENV)
    if REQUIREMENT in given:
        if args.source is not None:
            raise UsageError(
                message=f"--source and --data {REQUIREMENT}= both say where CI installs from",
                hint="give one of them",
            )
        value = given[REQUIREMENT]
        # A value outside the rule is refused with the other answers (scaffold); one inside it
        # is also held to pip's parser here.
        if answers_mod.validate_one(REQUIREMENT, value) is None:
            install_source.check(value)
        return value
    if source:
        return install_source.from_source(source)
    return install_source.from_installation()


def answer_names() -> tuple[str, ...]:
    from campaignops.generate.answers import NAMES

    return NAMES


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    new = sub.add_parser(
        "new",
        help="create a campaign repository from the template (git init + first commit)",
        description="Render a new campaign repository into DIRECTORY with Copier (default) or "
        "cookiecutter, from the template inside this package; then git init and commit. "
        "DIRECTORY's name is the campaign's slug. Without --defaults, asks each question.",
        epilog="questions: " + ", ".join(answer_names()),
    )
    new.add_argument("directory", metavar="DIRECTORY", help="where to create the campaign")
    new.add_argument(
        "--engine",
        choices=("copier", "cookiecutter"),
        default="copier",
        help="template engine (default: copier); both give the same files",
    )
    new.add_argument(
        "--defaults",
        action="store_true",
        help="do not ask: use defaults for every answer not given with --data",
    )
    new.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an answer, e.g. --data backends=alpine,local (repeatable)",
    )
    new.add_argument(
        "--source",
        metavar="URL@REF",
        help="the git repository CI and the pre-commit hook install campaignops from, at a tag "
        "or commit (REF is required); recorded as campaignops @ git+URL@REF. "
        "Default: $CAMPAIGNOPS_SOURCE, else this installation's git commit when it was "
        "installed from a repository, else campaignops==<this version> from the package index",
    )
    new.add_argument(
        "--template",
        metavar="SRC",
        help="copier only: a git URL or repository of the template to record and update from "
        "(default: this package's template, committed and tagged in a per-user cache, "
        "$CAMPAIGNOPS_TEMPLATE_CACHE or ~/.cache/campaignops/template)",
    )
    new.add_argument(
        "--vcs-ref",
        metavar="REF",
        help="copier only: the tag or commit of --template to use (default: its latest tag)",
    )
    contract.add_dry_run(new, help="print the directory and the answers; create nothing")
    contract.add_format(
        new, "text", "json", help="text (default) or json (one document; implies no questions)"
    )
    new.set_defaults(handler=_new)
