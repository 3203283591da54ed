"""`campaign publish comment|issue`: what the generated workflows run to post to GitHub/GitLab."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from campaignops.cli import contract
from campaignops.core import safetext
from campaignops.core.errors import InputError, UsageError

if TYPE_CHECKING:
    from campaignops.gitops.forge.publish import Forge, Outcome
    from campaignops.gitops.forge.settings import Settings


def _read_body(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InputError(path=path, message=f"cannot read the body ({why})") from None


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number")
    return int(value)


def _warn(err: TextIO, message: str) -> None:
    # In GitHub Actions a warning annotation shows on the run's page, not only in the log.
    if os.environ.get("GITHUB_ACTIONS") == "true":
        print(safetext.annotation("warning", f"campaign: {message}"), file=err)
        return
    print(safetext.plain_line(f"campaign: warning: {message}"), file=err)


def _comment(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.gitops.forge import publish, settings
    from campaignops.gitops.forge.http import ApiError

    name = publish.check_name(args.marker, option="--marker")
    body = _read_body(args.body_file)
    where = settings.from_env(
        os.environ, platform=args.platform, number=args.number, for_comment=True
    )
    if args.author is not None and where.platform != "github":
        raise UsageError(message="--author applies to GitHub only (GitLab asks GET /user)")
    kind, place = (
        ("comment", "pull request #") if where.platform == "github" else ("note", "merge request !")
    )
    target = f"{place}{where.number}"
    if args.dry_run:
        line = (
            f"dry run: nothing posted; would create or update the {kind} marked {name} on {target}"
        )
        doc = {"dry_run": True, "platform": where.platform, "number": where.number, "kind": kind}
        return _say(args, out, {**doc, "marker": name, "body_chars": len(body)}, line)
    if not where.token:  # only let through for a fork's merge request (settings.gitlab)
        return _unpublished(
            args,
            where.summary,
            body,
            f"no {settings.GITLAB_TOKEN} in this pipeline of a merge request from a fork "
            f"(project variables do not reach fork pipelines): nothing posted on {target}",
            out,
            err,
        )
    forge = _forge(where, author=args.author)
    assert where.number is not None  # from_env(for_comment=True) always finds one
    try:
        done = publish.comment(forge, number=where.number, name=name, body=body, kind=kind)
    except ApiError as exc:
        if not (where.fork and exc.status == 403):
            raise
        return _unpublished(
            args,
            where.summary,
            body,
            f"token cannot write to {target} from a fork (HTTP 403: {exc.api_message}): "
            "a fork's job gets a read-only token",
            out,
            err,
        )
    url = f": {done.url}" if done.url else ""
    line = f"{done.action} {kind} {done.id} on {target}{url}"
    doc = {"dry_run": False, "platform": where.platform, "number": where.number, "kind": kind}
    return _say(args, out, {**doc, "posted": True, **_outcome(done)}, line)


def _outcome(done: Outcome) -> dict[str, object]:
    return {"action": done.action, "id": done.id, "url": done.url}


def _say(args: argparse.Namespace, out: TextIO, doc: dict[str, object], line: str) -> int:
    """The one line of text, or the one JSON document."""
    if args.format == "json":
        contract.emit(out, args.command_name, doc)
    else:
        print(safetext.plain_line(line), file=out)
    return 0


def _unpublished(
    args: argparse.Namespace, summary: Path | None, body: str, why: str, out: TextIO, err: TextIO
) -> int:
    from campaignops.gitops.forge import publish

    if summary is not None:
        publish.append_summary(summary, body)
        _warn(err, f"{why}; review left in the job summary")
        if args.format == "json":
            contract.emit(
                out, args.command_name, {"posted": False, "reason": why, "left": "summary"}
            )
        return 0
    _warn(err, f"{why}; review left in the job log below")
    if args.format == "json":
        doc = {"posted": False, "reason": why, "left": "log", "body": body}
        contract.emit(out, args.command_name, doc)
        return 0
    # The body can quote a fork's file names: no line of it may act as a workflow command.
    for line in body.rstrip("\n").splitlines():
        print(safetext.plain_line(line), file=out)
    return 0


def _forge(where: Settings, *, author: str | None) -> Forge:
    from campaignops.gitops.forge.github import GitHub
    from campaignops.gitops.forge.gitlab import GitLab

    if where.platform == "github":
        return GitHub(where, author=author)
    return GitLab(where)


def _issue(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from campaignops.gitops.forge import publish, settings

    option = "--marker" if args.marker else "--label (the marker by default; or pass --marker)"
    name = publish.check_name(args.marker or args.label, option=option)
    if not args.label.strip() or "," in args.label:
        raise UsageError(message=f"--label {args.label!r} must be one label name (no comma)")
    if args.state == "open" and args.body_file is None:
        raise UsageError(message="--state open needs --body-file F (the issue's body)")
    # Closing leaves the body as it was (the last findings), so the file is not read then.
    body = _read_body(args.body_file) if args.state == "open" else ""
    where = settings.from_env(os.environ, platform=args.platform, number=None, for_comment=False)
    if args.author is not None and where.platform != "github":
        raise UsageError(message="--author applies to GitHub only (GitLab asks GET /user)")
    head = {"dry_run": args.dry_run, "platform": where.platform, "label": args.label}
    if args.dry_run:
        line = f"dry run: nothing sent; would bring the issue labelled {args.label} to {args.state}"
        return _say(args, out, {**head, "state": args.state, "issues": []}, line)
    forge = _forge(where, author=args.author)
    outcomes = publish.issue(
        forge, label=args.label, name=name, title=args.title, body=body, state=args.state
    )
    lines = []
    for done in outcomes:
        if done.action == "nothing":
            lines.append(f"no open issue labelled {args.label} of ours: nothing to close")
        else:
            url = f": {done.url}" if done.url else ""
            lines.append(f"{done.action} issue #{done.id}{url}")
    issues = [_outcome(done) for done in outcomes]
    if args.format == "json":
        return _say(args, out, {**head, "state": args.state, "issues": issues}, "")
    for line in lines:
        print(safetext.plain_line(line), file=out)
    return 0


COMMON = """\
settings come from the CI environment (docs/gitops.md, Settings):
  GitHub  GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_TOKEN or GH_TOKEN, GITHUB_EVENT_PATH
  GitLab  CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID, CAMPAIGN_GITLAB_TOKEN
  (CI_JOB_TOKEN cannot write notes or issues: use a project access token)
--platform defaults to github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true.
exit codes: 0 published (or, for a comment, a fork's read-only token: left in the job
summary with a warning), 2 missing setting, a token with whitespace or control characters,
an installation token without --author, unreadable body, or an API error: an error status,
an unreachable or broken answer, an answer of the wrong shape (what is wrong is shown; the
token never is)."""


def _platform_arg(parser: argparse.ArgumentParser) -> None:
    contract.add_dry_run(
        parser, help="check the settings and the body; contact nothing, post nothing"
    )
    contract.add_format(parser, "text", "json", help=contract.TEXT_OR_JSON)
    parser.add_argument(
        "--platform",
        choices=("github", "gitlab"),
        help="where to publish (default: from GITHUB_ACTIONS / GITLAB_CI)",
    )
    parser.add_argument(
        "--author",
        metavar="LOGIN",
        help="GitHub only: the login whose items are ours, the account the token posts as "
        "(default: GET /user's login; an installation token cannot be asked, so with "
        "GITHUB_TOKEN pass github-actions[bot], as the generated workflows do)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pub = sub.add_parser(
        "publish",
        help="post a sticky PR/MR comment or keep one labelled issue (GitHub, GitLab)",
        description="Publish a report where people read it: one comment per pull request (or "
        "merge request note), or one open issue per label, found again on later runs by a "
        "hidden <!-- campaignops:NAME --> marker and the token's own author, and updated in "
        "place: never a duplicate.",
    )
    kinds = pub.add_subparsers(dest="publish", required=True, metavar="WHAT")
    com = kinds.add_parser(
        "comment",
        help="create or update the one marked comment on a pull request / merge request",
        description=textwrap.fill(
            "Create the comment the first time; later runs edit that same comment "
            "(nothing is sent when the body is unchanged). A human's comment that quotes the "
            "marker is never taken over. Bodies over the platform's limit (GitHub 65,536 "
            "characters, GitLab 1,000,000) are cut with a note."
        ),
        epilog=COMMON,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    com.add_argument("--marker", required=True, metavar="NAME", help="e.g. campaign-review")
    com.add_argument(
        "--body-file", required=True, metavar="F", help="Markdown body ('-' reads stdin)"
    )
    com.add_argument(
        "--number",
        type=_positive,
        metavar="N",
        help="pull request / merge request number (default: the event's pull_request.number "
        "or CI_MERGE_REQUEST_IID)",
    )
    _platform_arg(com)
    com.set_defaults(handler=_comment)

    iss = kinds.add_parser(
        "issue",
        help="keep one open issue with a label: open/update it, or close it",
        description=textwrap.fill(
            "--state open: create the issue if none of ours is open with LABEL, else "
            "update its title and body in place. --state closed: close ours (reason completed) "
            "if one is open, else do nothing. Issues are listed (never searched: the search index "
            "lags), pull requests skipped."
        ),
        epilog=COMMON,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    iss.add_argument("--label", required=True, metavar="L", help="e.g. campaign-audit")
    iss.add_argument("--title", required=True, metavar="T", help="the issue's title")
    iss.add_argument(
        "--body-file", metavar="F", help="Markdown body ('-' reads stdin); needed for open"
    )
    iss.add_argument("--state", required=True, choices=("open", "closed"))
    iss.add_argument("--marker", metavar="NAME", help="hidden marker name (default: the label)")
    _platform_arg(iss)
    iss.set_defaults(handler=_issue)
