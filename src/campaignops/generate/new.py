"""`campaign new`: render a campaign repository from the template and make its first commit.

The template (copier.yml + template/) ships inside the package as campaignops/_template; in a
source checkout it is the repository root. Both engines render the same source; answers are
validated here first (campaignops.generate.answers), so a refused answer never reaches an engine.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from campaignops.core import gitcli
from campaignops.core.errors import CampaignError, UsageError
from campaignops.generate import answers as answers_mod

ENGINES = ("copier", "cookiecutter")


@dataclass(frozen=True)
class Generated:
    path: Path
    engine: str
    commit: str
    answers: Mapping[str, str]


def template_root() -> Path:
    """Where copier.yml and template/ are: in the installed package, or in the source checkout."""
    shipped = Path(str(resources.files("campaignops"))) / "_template"
    if (shipped / "copier.yml").is_file():
        return shipped
    checkout = Path(str(resources.files("campaignops"))).resolve().parents[1]  # src/campaignops
    if (checkout / "copier.yml").is_file():
        return checkout
    raise CampaignError(
        message="the campaign template is missing from this installation",
        hint="reinstall campaignops (pip install --force-reinstall campaignops)",
    )


GENERATION_EXTRA = "pip install 'campaignops[new]'"


def require_engine(engine: str) -> None:
    """Refuse early when the template engine is not installed: generation is an extra, so the
    hook and CI environments, which only check, do not carry Copier and cookiecutter."""
    import importlib.util

    if engine in RENDERERS and importlib.util.find_spec(engine) is None:
        raise UsageError(
            message=f"campaign new needs {engine}, which is not installed here",
            hint=f"install the generation extra: {GENERATION_EXTRA}",
        )


def resolve_answers(
    *, directory: Path, given: Mapping[str, str], ask: Callable[[answers_mod.Question, str], str]
) -> dict[str, str]:
    """Answers in question order: given ones, then derived defaults, then ``ask`` for the rest.

    The directory's name is the default slug (and name), so `campaign new my-campaign` gives
    a campaign called my-campaign.
    """
    unknown = sorted(set(given) - set(answers_mod.NAMES))
    if unknown:
        raise UsageError(
            message=f"unknown question(s): {', '.join(unknown)}",
            hint="questions are: "
            + ", ".join(answers_mod.NAMES)
            + " (cookiecutter is computed from them and cannot be given)",
        )
    result: dict[str, str] = {}
    for q in answers_mod.QUESTIONS:
        if q.name in given:
            result[q.name] = given[q.name]
            continue
        default = q.default
        if q.name in ("campaign_slug", "campaign_name"):
            default = directory.name
        elif q.name == "notify_email":
            default = result["owner_email"]
        elif q.name == "smoke_backend":
            default = result["backends"].split(",")[0]
        result[q.name] = ask(q, default)
    return result


def _check(answers: Mapping[str, str], *, directory: Path) -> None:
    problems = answers_mod.validate(answers)
    if problems:
        # One line, each answer named with what was given (repr shows a trailing newline).
        refused = "; ".join(
            f"{name}={answers.get(name)!r}: {message}" for name, message in problems.items()
        )
        raise UsageError(
            message=f"refused answer(s): {refused}",
            hint="fix them with --data NAME=VALUE (see campaign new --help)",
        )
    if answers["campaign_slug"] != directory.name:
        raise UsageError(
            message=f"campaign_slug {answers['campaign_slug']!r} differs from the directory "
            f"name {directory.name!r}",
            hint="name the directory after the slug (cookiecutter creates it from the slug)",
        )


def _render_copier(root: Path, dest: Path, answers: Mapping[str, str]) -> None:
    import copier

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        copier.run_copy(
            str(root), str(dest), data=dict(answers), defaults=True, quiet=True, unsafe=False
        )


def copier_source(template: str | None) -> tuple[str, str | None]:
    """Where copier reads the template, and at which ref, so that `copier update` can later
    regenerate the campaign's version: a given source (a git URL or repository) as it is, at
    its latest tag; else the packaged template, committed and tagged in the per-user cache
    (campaignops.generate.template_source)."""
    if template is not None:
        return template, None
    from campaignops import __version__
    from campaignops.generate import template_source

    made = template_source.ensure(root=template_root(), version=__version__)
    return made.url, made.tag


def _render_copier_versioned(
    template: str | None, vcs_ref: str | None, dest: Path, answers: Mapping[str, str]
) -> None:
    import copier

    src, ref = copier_source(template)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        copier.run_copy(
            src,
            str(dest),
            data=dict(answers),
            vcs_ref=vcs_ref or ref,
            defaults=True,
            quiet=True,
            unsafe=False,
        )


def _render_cookiecutter(root: Path, dest: Path, answers: Mapping[str, str]) -> None:
    from cookiecutter.main import cookiecutter

    cookiecutter(
        str(root),
        directory="template",
        no_input=True,
        extra_context=dict(answers),
        output_dir=str(dest.parent),
        accept_hooks=True,
    )


RENDERERS: Mapping[str, Callable[[Path, Path, Mapping[str, str]], None]] = {
    "copier": _render_copier,
    "cookiecutter": _render_cookiecutter,
}


def _first_commit(dest: Path, answers: Mapping[str, str]) -> str:
    """``git init`` on main, everything added, one commit; its id. The owner's name and e-mail
    sign it where git has no identity of its own; it is never signed with a key (a new
    campaign's first commit should not wait on a passphrase)."""
    gitcli.run(dest, "init", "-q", "--initial-branch=main")
    gitcli.run(dest, "add", "-A")
    has_identity = gitcli.call(dest, "config", "--get", "user.email").returncode == 0
    owner = [f"user.name={answers['owner_name']}", f"user.email={answers['owner_email']}"]
    message = f"New campaign {answers['campaign_slug']} (campaignops template)"
    # The repository's own hooks only (what `git init` copied), not a global core.hooksPath.
    settings = ["commit.gpgSign=false", "core.hooksPath=.git/hooks"]
    settings += [] if has_identity else owner
    gitcli.run(dest, "commit", "-q", "-m", message, config=settings)
    return gitcli.run(dest, "rev-parse", "HEAD").decode("ascii").strip()


def generate(
    *,
    directory: Path,
    answers: Mapping[str, str],
    engine: str = "copier",
    template: str | None = None,
    vcs_ref: str | None = None,
    step: Callable[[str], None] = lambda _: None,
) -> Generated:
    """Render the campaign into ``directory`` (which must not exist or be empty) and commit it.

    With copier, from ``template`` (a git URL or repository, at ``vcs_ref`` or its latest tag)
    or the packaged template's cache repository, so `campaign update` can follow it. ``step``
    is told each step as it starts (the CLI shows it on a terminal)."""
    if engine not in RENDERERS:
        raise UsageError(message=f"unknown engine {engine!r}", hint="use copier or cookiecutter")
    require_engine(engine)
    if engine != "copier" and (template is not None or vcs_ref is not None):
        raise UsageError(
            message="--template and --vcs-ref are for the copier engine",
            hint="drop --engine cookiecutter, or the --template/--vcs-ref options",
        )
    _check(answers, directory=directory)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise UsageError(
            message=f"{directory} exists and is not empty",
            hint="choose a new directory: campaign new never overwrites files",
        )
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file (existing-file/x), a read-only place …
        blocker = next((p for p in directory.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file, not a directory" if blocker else exc.strerror or str(exc)
        raise UsageError(
            message=f"cannot create {directory.parent}: {why}",
            hint="choose a directory whose parents are directories you may write to",
        ) from None
    if directory.is_dir():
        directory.rmdir()  # cookiecutter refuses an existing output directory
    step(f"rendering the template with {engine}")
    try:
        if engine == "copier":
            _render_copier_versioned(template, vcs_ref, directory, answers)
        else:
            RENDERERS[engine](template_root(), directory, answers)
    except CampaignError:
        raise
    except Exception as exc:  # an engine's own failure: report it, do not leave half a campaign
        raise CampaignError(
            message=f"{engine} could not render the template: {_one_line(exc)}",
            hint="run again with the other --engine, and report this as a bug",
        ) from exc
    step("git init and the first commit")
    commit = _first_commit(directory, answers)
    return Generated(path=directory, engine=engine, commit=commit, answers=dict(answers))


def _one_line(exc: BaseException) -> str:
    return re.sub(r"\s+", " ", str(exc)).strip()[:300] or type(exc).__name__


def parse_data(pairs: list[str]) -> dict[str, str]:
    data: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(
                message=f"--data {pair!r}: expected NAME=VALUE", hint="e.g. --data domain=md"
            )
        data[name.strip()] = value
    return data


def environment_ok() -> bool:
    """Whether a terminal is there to ask questions on."""
    return os.isatty(0)
