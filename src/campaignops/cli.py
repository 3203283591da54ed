"""The `campaign` command: parse arguments, call the library with keywords, map errors to exits.

Exit codes: 0 clean, 1 findings or a refusal, 2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from campaignops import __version__, layout
from campaignops.checks import context, registry, report
from campaignops.errors import CampaignError, UsageError

Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _display(root: Path, cwd: Path) -> Callable[[str], str]:
    def display(rel: str) -> str:
        full = root / rel
        try:
            return full.relative_to(cwd).as_posix()
        except ValueError:
            return os.path.relpath(full, cwd)

    return display


def _check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    cwd = Path.cwd()
    ctx = context.build(paths=args.paths, cwd=cwd, today=args.today, base=args.base, fix=args.fix)
    result = registry.run(ctx, select=args.select, ignore=args.ignore)
    display = _display(ctx.root, cwd.resolve())
    text = report.render(result, fmt=args.format, display=display)
    if text:
        print(text, file=out)
    if args.format != "json":
        for problem in result.problems:
            print(
                f"campaign: error: {display(problem.path)}: {problem.message.split(': ', 1)[-1]}",
                file=err,
            )
            if problem.hint:
                print(f"  hint: {problem.hint}", file=err)
    if result.problems:
        return 2
    return 1 if result.findings else 0


def _lock(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops import lockfile  # command modules load on use: `check` starts faster

    root = layout.find_root(Path.cwd()) or Path.cwd()
    entries = lockfile.lock(root=root, paths=args.paths, cwd=Path.cwd(), today=args.today)
    for entry in entries:
        print(f"locked {entry.path} {entry.digest} {entry.date.isoformat()}", file=out)
    return 0


def _render(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops import views  # loaded by the commands that render: check starts faster

    root = layout.find_root(Path.cwd())
    if root is None:
        print(f"campaign: error: no {layout.POLICY_FILE} here or above", file=err)
        return 2
    changed = views.render_all(root=root, write=not args.check)
    for rel in changed:
        print(f"{'out of sync' if args.check else 'rendered'}: {rel}", file=out)
    return 1 if (args.check and changed) else 0


def _new(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops import scaffold

    directory = Path(args.directory).resolve()
    given = scaffold.parse_data(args.data)

    def ask(question: object, default: str) -> str:
        from campaignops.answers import Question

        assert isinstance(question, Question)
        if args.defaults:
            return default
        if not scaffold.environment_ok():
            raise UsageError(
                message=f"no terminal to ask {question.name!r} on",
                hint="pass --defaults, and --data NAME=VALUE for the answers you want",
            )
        choices = f" [{'/'.join(question.choices)}]" if question.choices else ""
        reply = input(f"{question.help}{choices} ({default}): ").strip()
        return reply or default

    answers = scaffold.resolve_answers(directory=directory, given=given, ask=ask)
    made = scaffold.generate(directory=directory, answers=answers, engine=args.engine)
    shown = os.path.relpath(made.path, Path.cwd())
    if shown.startswith(".."):
        shown = str(made.path)
    print(f"Created {shown} with {made.engine} (first commit {made.commit[:10]}).", file=out)
    print("Next:", file=out)
    for step in (
        f"cd {shown}",
        "pre-commit install          # the checks on every commit",
        "campaign check              # policy, manifests, stamps, line endings, wrappers, views",
        "campaign submit manifests/example.yaml --stage smoke --dry-run",
    ):
        print(f"  {step}", file=out)
    return 0


def _campaign_root() -> Path:
    root = layout.find_root(Path.cwd())
    if root is None:
        raise UsageError(
            message=f"no {layout.POLICY_FILE} here or above",
            hint="run inside a campaign repository (campaign new creates one)",
        )
    return root


def _submit(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.runner import submit

    root = _campaign_root()
    manifest = layout.root_relative(
        args.manifest, root=root, cwd=Path.cwd(), hint="pass a manifest inside the campaign"
    )
    result = submit.submit(
        root=root,
        manifest=manifest,
        stage=args.stage,
        targets=args.targets,
        backend=args.backend,
        after=args.after,
        dry_run=args.dry_run,
        override=args.override,
        commit=args.commit,
    )
    for planned in result.planned:
        spec = planned.job.spec
        print(f"== {spec.name} on {result.backend}: {len(spec.tasks)} task(s)", file=out)
        for v in planned.verdicts:
            mark = "pass" if v.passed else "REFUSE"
            print(f"  gate {v.gate:<12} {mark:<6} {v.reason}", file=out)
            if not v.passed:
                print(f"    hint: {v.hint}", file=out)
        if args.dry_run:
            print(f"-- the script that would be submitted:\n{planned.script}", file=out)
    if args.dry_run:
        print("dry run: nothing submitted", file=out)
        return 0
    for s in result.submitted:
        print(f"submitted {s.name} as job {s.job_id} (ledger {s.ledger_id})", file=out)
    if result.commit:
        print(f"committed ledger, lock and STATUS.md: {result.commit[:10]}", file=out)
    print(
        "next: campaign status --refresh   (STATUS.md and .campaign/ledger.jsonl record it)",
        file=out,
    )
    return 0


def _status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    import json as json_mod

    from campaignops import ledger as ledger_mod
    from campaignops import views
    from campaignops.files import FileReader
    from campaignops.runner import status

    root = _campaign_root()

    def report(done: status.Refresh, left: int | None = None) -> None:
        print(
            f"refreshed: {done.queries} scheduler call(s), {len(done.changed)} change(s)"
            + (f", {len(done.reconciled)} lost result(s) found" if done.reconciled else "")
            + ("" if left is None else f", {left} job(s) unfinished"),
            file=err,
            flush=True,
        )

    if args.watch:
        try:
            status.watch(root=root, report=report, interval=args.interval)
        except KeyboardInterrupt:
            print("stopped watching; the jobs go on (campaign status --refresh)", file=err)
            return 130
    elif args.refresh:
        report(status.refresh(root=root))
    if args.format == "json":
        jobs = [dict(j.record) for j in ledger_mod.read(root).jobs]
        print(json_mod.dumps({"jobs": jobs}, indent=2), file=out)
        return 0
    sources = views.Sources(FileReader(root))
    if args.format == "markdown":
        print(sources.render("stages") + "\n\n" + sources.render("jobs"), file=out)
        return 0
    for line in sources.render("jobs").splitlines():
        if not line.startswith("| ---"):
            print(line.strip("|").replace(" | ", "  "), file=out)
    print(f"STATUS.md: {root / 'STATUS.md'}\nledger: {root / layout.LEDGER_FILE}", file=out)
    return 0


def _list_checks(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    for fam in registry.FAMILIES.values():
        print(f"{fam.name}: {fam.summary}", file=out)
        for code in fam.codes.values():
            print(f"  {code.id}  {code.message}", file=out)
    return 0


CHECK_EPILOG = """\
families: {families}
exit codes: 0 clean, 1 findings, 2 usage error or unreadable input.
Without PATHs, files are discovered from campaign.yaml's globs (found here or above).
With PATHs (as pre-commit passes them), each file is classified by its path.
`campaign checks` lists every ID with its message."""


def answer_names() -> tuple[str, ...]:
    from campaignops.answers import NAMES

    return NAMES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="campaign",
        description="GitOps for compute campaigns: check a campaign repository.",
    )
    parser.add_argument("--version", action="version", version=f"campaignops {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chk = sub.add_parser(
        "check",
        help="check campaign files (manifests, stamps, line endings, wrappers, queues, views, policy)",
        description="Check a campaign repository. Prints path:line:col: ID message, and a hint.",
        epilog=CHECK_EPILOG.format(families=", ".join(registry.FAMILIES)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chk.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to check")
    chk.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="ID[,ID…]",
        help="only these families (MAN) or IDs (MAN003); repeat or comma-separate",
    )
    chk.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="ID[,ID…]",
        help="skip these families or IDs; repeat or comma-separate",
    )
    chk.add_argument(
        "--base",
        metavar="REF",
        help="git ref to compare against for append-only rules (lock, queues)",
    )
    chk.add_argument(
        "--fix",
        action="store_true",
        help="rewrite what can be fixed safely (line endings, BOMs, .gitattributes)",
    )
    chk.add_argument(
        "--today",
        type=_date,
        metavar="YYYY-MM-DD",
        help="the date stamps are aged against (default: today)",
    )
    chk.add_argument(
        "--format",
        choices=sorted(report.FORMATTERS),
        default="text",
        help="text (default), github (workflow annotations), json (for tools)",
    )
    chk.set_defaults(handler=_check)

    lck = sub.add_parser(
        "lock",
        help="record wrappers' sha256 in .campaign/wrappers.lock",
        description="Record each wrapper's sha256 and today's date in .campaign/wrappers.lock "
        "(append-only). A locked wrapper must never change: copy it to the next version.",
    )
    lck.add_argument("paths", nargs="+", metavar="PATH", help="wrapper scripts to lock")
    lck.add_argument("--today", type=_date, metavar="YYYY-MM-DD", help="date to record")
    lck.set_defaults(handler=_lock)

    rnd = sub.add_parser(
        "render",
        help="rebuild the generated blocks (views) in the campaign's Markdown files",
        description="Rebuild every <!-- campaign:begin NAME --> block from its source.",
    )
    rnd.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list out-of-sync files and exit 1 if any",
    )
    rnd.set_defaults(handler=_render)

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
    new.set_defaults(handler=_new)

    sbm = sub.add_parser(
        "submit",
        help="submit a manifest's targets from committed files, through the five gates",
        description="Submit a manifest's targets to a backend: only from committed files, "
        "smoke before single/production, no duplicate of a queued or running job, and not a "
        "fourth try of the same crash. Gates in order: committed, authorized, smoke_first, "
        "no_sibling, breaker. Every submission is recorded in .campaign/ledger.jsonl.",
        epilog="exit codes: 0 submitted (or dry run), 1 a gate refused or the scheduler "
        "rejected the job, 2 usage error or the scheduler is unreachable.",
    )
    sbm.add_argument("manifest", metavar="MANIFEST", help="a manifest under manifests/")
    sbm.add_argument(
        "--stage",
        required=True,
        choices=("smoke", "single", "production"),
        help="smoke (run length cut), single (one target), production (fan-out)",
    )
    sbm.add_argument(
        "--targets", nargs="+", default=[], metavar="ID", help="only these targets (default: all)"
    )
    sbm.add_argument(
        "--backend",
        metavar="NAME",
        help="an authorized backend (default: the manifest's, else smoke_backend "
        "for smoke, else the first authorized)",
    )
    sbm.add_argument("--after", metavar="JOBID", help="start only after JOBID completes (afterok)")
    sbm.add_argument(
        "--dry-run",
        action="store_true",
        help="print every gate's verdict and the exact script; submit nothing",
    )
    sbm.add_argument(
        "--override",
        metavar="REASON",
        help="pass a tripped breaker; the reason is recorded in the ledger",
    )
    sbm.add_argument(
        "--commit",
        action="store_true",
        help="commit the ledger, the wrapper lock and STATUS.md afterwards",
    )
    sbm.set_defaults(handler=_submit)

    sts = sub.add_parser(
        "status",
        help="show the campaign's jobs; --refresh asks each backend once",
        description="Show the jobs recorded in the ledger. With --refresh, one batched query per "
        "backend updates every unfinished job (state changes go to the ledger) and STATUS.md is "
        "re-rendered. --watch repeats that at most once a minute until every job has finished; "
        "there is no faster loop.",
    )
    sts.add_argument(
        "--refresh",
        action="store_true",
        help="query the backends (one batched call set each) before showing",
    )
    sts.add_argument(
        "--watch",
        action="store_true",
        help="refresh, wait, refresh again … until every job has finished (Ctrl-C stops "
        "watching, not the jobs)",
    )
    sts.add_argument(
        "--interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between --watch rounds; 60 or more (default 60)",
    )
    sts.add_argument(
        "--format",
        choices=("table", "markdown", "json"),
        default="table",
        help="table (default), markdown (STATUS.md's tables), json (ledger records)",
    )
    sts.set_defaults(handler=_status)

    lst = sub.add_parser(
        "checks",
        help="list check families and IDs",
        description="List every check family and ID with its message.",
    )
    lst.set_defaults(handler=_list_checks)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # File names are bytes on POSIX; one that is not valid UTF-8 must not crash the report.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args, sys.stdout, sys.stderr)
    except CampaignError as exc:
        print(f"campaign: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`campaign check | head`): silence the final flush, report failure.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
