"""The prose files of the generated campaign: README.md, AGENTS.md, HPC_PLAYBOOK.md, LESSONS.md.

Each file is rendered with plain Jinja (as both engines do: no extensions, trailing newline kept)
for a spread of answers, and the rendered text is held to what a campaign needs from it: the
backends view, links to the chosen backends' pages only, `campaign` commands that exist, length
limits, no template syntax left over, and stamps that the STALE checks accept.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import jinja2
import pytest

from campaignops import cli
from campaignops.backends import script
from campaignops.checks import registry
from campaignops.cli import contract
from campaignops.generate import answers as answers_mod
from campaignops.model import blocks, lessons, stamps

TEMPLATE = Path(__file__).resolve().parents[2] / "template" / "{{cookiecutter.campaign_slug}}"
PROSE = ("README.md", "AGENTS.md", "HPC_PLAYBOOK.md", "LESSONS.md")
# Every backend the template offers (the answers' own list: a new page joins these tests).
ALL_BACKENDS = answers_mod.BACKENDS
DOMAINS = ("md", "ml-training", "quantum-chemistry", "other")
CI = ("github", "gitlab", "both", "none")
# The runner's commands: the contract of the next issue, written as the commands to use.
RUNNER_COMMANDS = frozenset({"submit", "status", "new"})
# Never to be mentioned: they do not exist and are not planned under these names.
VIEW_NAMES = frozenset({"backends", "failures", "stages", "jobs", "backend-tree"})
# AGENTS.md: 150 until its section on what the agent tools enforce (issue 21; docs/decisions.md).
LINE_LIMITS = {"AGENTS.md": 170, "HPC_PLAYBOOK.md": 250}
# Stamps are aged against a fixed day (as in tests/conftest.py) so the suite does not rot.
TODAY = dt.date(2026, 11, 21)
STALE_AFTER_MONTHS = 6

_FENCE = re.compile(r"[ \t]*(```|~~~)")
_SPAN = re.compile(r"`([^`\n]+)`")
_COMMAND = re.compile(r"(?<![\w./-])campaign[ \t]+([A-Za-z][\w-]*)")
_MARKER = re.compile(r"<!--[ \t]*campaign:(begin|end)[ \t]+backends[ \t]*-->")


def answers(**override: str) -> dict[str, str]:
    """The template's answers (all strings, as both engines pass them), defaults first."""
    values = {
        "campaign_name": "Conformer sweep 2026",
        "campaign_slug": "conformer-sweep-2026",
        "description": "Conformer search for the 2026 benchmark set.",
        "owner_name": "Ada Lovelace",
        "owner_email": "ada@example.org",
        "notify_email": "hpc-mail@example.org",
        "backends": "local",
        "smoke_backend": "local",
        "domain": "other",
        "ci": "github",
        "stale_after_months": "6",
        "cloud_budget_usd": "0",
        "hpc_allocation_cap_percent": "80",
        "require_pushed": "yes",
    }
    values.update(override)
    return values


def render(name: str, context: dict[str, str]) -> str:
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    source = (TEMPLATE / name).read_text(encoding="utf-8")
    return env.from_string(source).render(cookiecutter=context)


def _cases() -> Iterator[tuple[str, dict[str, str]]]:
    everything = ",".join(ALL_BACKENDS)
    for i, domain in enumerate(DOMAINS):
        yield (
            f"local-{domain}",
            answers(domain=domain, ci=CI[i], require_pushed="no" if i % 2 else "yes"),
        )
        yield (
            f"all-{domain}",
            answers(
                backends=everything,
                smoke_backend=ALL_BACKENDS[i],
                domain=domain,
                ci=CI[-1 - i],
                cloud_budget_usd="250.50" if i % 2 else "0",
            ),
        )
    for name in ALL_BACKENDS:
        yield f"only-{name}", answers(backends=name, smoke_backend=name, cloud_budget_usd="40")


CASES = dict(_cases())


@pytest.fixture(params=sorted(CASES), scope="module")
def case(request: pytest.FixtureRequest) -> tuple[dict[str, str], dict[str, str]]:
    """(answers, rendered text of each prose file)."""
    context = CASES[request.param]
    return context, {name: render(name, context) for name in PROSE}


# --- helpers (each also tested on bad input below, so the assertions can fail) ---------------


def code_fragments(markdown: str) -> list[str]:
    """Inline code spans and the lines of fenced code blocks: where commands are written."""
    fragments: list[str] = []
    in_fence = False
    for line in markdown.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            fragments.append(line)
        else:
            fragments.extend(_SPAN.findall(line))
    return fragments


def campaign_commands(markdown: str) -> set[str]:
    """The subcommand of every `campaign <cmd>` written as code."""
    return {m.group(1) for frag in code_fragments(markdown) for m in _COMMAND.finditer(frag)}


@cache
def is_cli_subcommand(name: str) -> bool:
    """True when `campaign NAME --help` is accepted by the real parser (exit 0)."""
    parser: argparse.ArgumentParser = cli.build_parser()
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        try:
            parser.parse_args([name, "--help"])
        except SystemExit as exc:
            return exc.code == 0
        except contract.ArgvError:  # the parser raises its usage errors (cli/contract.py)
            return False
    return False


def stamp_problems(markdown: str) -> list[str]:
    """What STALE would report about the stamps of a Markdown file, aged against TODAY."""
    problems: list[str] = []
    for stamp in stamps.markdown_stamps(markdown):
        where = f"line {stamp.line}: {stamp.raw!r}"
        if stamp.malformed or stamp.date is None:
            problems.append(f"{where} is malformed")
        elif stamps.is_future(stamp, TODAY):
            problems.append(f"{where} is in the future")
        elif stamps.age_in_months(stamp.date, TODAY) > STALE_AFTER_MONTHS:
            problems.append(f"{where} is stale")
    return problems


def linked_backends(markdown: str) -> set[str]:
    return {b for b in ALL_BACKENDS if f"](backends/{b}.md)" in markdown}


def mentioned_pages(markdown: str) -> set[str]:
    return {
        b for b in ALL_BACKENDS if re.search(rf"(?<![\w-])backends/{re.escape(b)}\.md", markdown)
    }


# --- the rendered files -----------------------------------------------------------------------


def test_no_template_syntax_left(case: tuple[dict[str, str], dict[str, str]]) -> None:
    _, texts = case
    for name, text in texts.items():
        for token in ("{{", "{%", "{#", "%}", "}}"):
            assert token not in text, f"{name}: {token!r} left after rendering"
        assert text.endswith("\n") and not text.endswith("\n\n"), f"{name}: final newline"


def test_backends_view_markers_once_with_one_row_per_backend(
    case: tuple[dict[str, str], dict[str, str]],
) -> None:
    context, texts = case
    agents = texts["AGENTS.md"]
    lines = agents.splitlines()
    begin = [i for i, line in enumerate(lines) if line == "<!-- campaign:begin backends -->"]
    end = [i for i, line in enumerate(lines) if line == "<!-- campaign:end backends -->"]
    assert (len(begin), len(end)) == (1, 1), "one begin and one end marker of the backends view"
    # dev/template_views.py pre-renders the table: header, rule, one row per chosen backend, in
    # the chosen order (tests/template/test_generated.py checks it equals `campaign render`).
    inside = lines[begin[0] + 1 : end[0]]
    chosen = context["backends"].split(",")
    assert inside[0] == inside[-1] == "" and len(inside) == len(chosen) + 4
    for i, name in enumerate(chosen, start=1):
        assert inside[2 + i].startswith(f"| {i} | [{name}](backends/{name}.md) |")
    parsed = blocks.parse(agents, known=VIEW_NAMES)
    assert parsed.defects == ()
    assert [b.name for b in parsed.blocks] == ["backends"]
    for name in ("README.md", "HPC_PLAYBOOK.md", "LESSONS.md"):
        assert not _MARKER.search(texts[name]), f"{name} must not carry the backends view"
    for name in ("README.md", "LESSONS.md"):
        assert blocks.parse(texts[name], known=VIEW_NAMES) == blocks.Parsed((), ())
    # The playbook's questions are a view of their own (views/tree.py), rebuilt by render.
    tree = blocks.parse(texts["HPC_PLAYBOOK.md"], known=VIEW_NAMES)
    assert tree.defects == () and [b.name for b in tree.blocks] == ["backend-tree"]


def test_playbook_links_exactly_the_chosen_backends(
    case: tuple[dict[str, str], dict[str, str]],
) -> None:
    context, texts = case
    chosen = set(context["backends"].split(","))
    assert linked_backends(texts["HPC_PLAYBOOK.md"]) == chosen
    for name, text in texts.items():
        unchosen = mentioned_pages(text) - chosen
        assert not unchosen, f"{name} names pages of backends not chosen: {sorted(unchosen)}"


def test_campaign_commands_exist(case: tuple[dict[str, str], dict[str, str]]) -> None:
    _, texts = case
    for name, text in texts.items():
        for command in sorted(campaign_commands(text)):
            assert command in RUNNER_COMMANDS or is_cli_subcommand(command), (
                f"{name}: `campaign {command}` is neither a subcommand of `campaign --help` "
                f"nor one of the runner's ({', '.join(sorted(RUNNER_COMMANDS))})"
            )


def test_line_limits(case: tuple[dict[str, str], dict[str, str]]) -> None:
    _, texts = case
    # The backends view is pre-rendered in the template, so the rendered text is what a user sees.
    for name, limit in LINE_LIMITS.items():
        count = texts[name].count("\n")
        assert count <= limit, f"{name} has {count} lines once rendered (limit {limit})"


def test_stamps_pass_stale(case: tuple[dict[str, str], dict[str, str]]) -> None:
    _, texts = case
    for name, text in texts.items():
        assert stamp_problems(text) == [], name


def test_every_source_line_in_the_playbook_is_stamped(
    case: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, texts = case
    playbook = texts["HPC_PLAYBOOK.md"]
    sources = len(re.findall(r"^Sources?: ", playbook, flags=re.MULTILINE))
    assert len(stamps.markdown_stamps(playbook)) == sources


def test_the_runner_is_not_announced_as_coming(case: tuple[dict[str, str], dict[str, str]]) -> None:
    # The runner exists: no generated page may still promise it, and the waiting advice names
    # the commands that refresh (a bare `campaign status` only shows the ledger).
    _, texts = case
    for name, text in texts.items():
        assert "coming" not in text, name
    assert "`campaign status --refresh` asks each backend once" in texts["HPC_PLAYBOOK.md"]
    assert "campaign status --watch" in texts["HPC_PLAYBOOK.md"]


_CHECK_ID = re.compile(r"\b[A-Z]{3,6}[0-9]{3}\b")


def test_prose_says_only_what_the_tool_enforces(
    case: tuple[dict[str, str], dict[str, str]],
) -> None:
    # campaign.yaml was "what campaign submit enforces" while budgets and smoke_max_minutes were
    # accepted and ignored; now both are enforced, and the prose says where (budgets: on pages
    # with a charging model).
    context, texts = case
    agents = " ".join(texts["AGENTS.md"].split())
    assert "it is what `campaign submit` enforces" not in agents
    assert "rules (`stages.smoke_max_minutes` included)" in agents
    assert "the budgets wherever a backend page has a `charging` block" in agents
    assert "manifest key that the runner does not run (MAN012)" in agents
    # Which rules the agent tools enforce, and which they do not (issue 21).
    assert "**Enforced** by the tools: the six gates of `campaign submit`" in agents
    assert "**Not enforced**, yours to keep:" in agents
    assert "`.claude/settings.json` runs `campaign guard --format hook`" in agents
    assert "register `campaign mcp` as a stdio MCP server" in agents
    policy = render("campaign.yaml", context)
    assert "not checked yet" not in policy
    (smoke,) = [x for x in policy.splitlines() if x.strip().startswith("smoke_max_minutes:")]
    assert "refused by smoke_first" in smoke
    # The playbook explains the job script's own exit codes, as runner.script gives them.
    playbook = " ".join(texts["HPC_PLAYBOOK.md"].split())
    assert "Exit 96 or 97 is the job script's own check" in playbook
    assert sorted(script.REASONS) == [96, 97]
    assert "96, a manifest `precondition` did not hold" in playbook
    assert "97, the task exited 0 but its `output` is missing or empty" in playbook
    for name, text in texts.items():
        for cid in _CHECK_ID.findall(text):
            assert cid in registry.ALL_CODES, f"{name} names {cid}, which is no check ID"


def test_answers_are_rendered(case: tuple[dict[str, str], dict[str, str]]) -> None:
    context, texts = case
    readme, agents, playbook = texts["README.md"], texts["AGENTS.md"], texts["HPC_PLAYBOOK.md"]
    assert readme.startswith(f"# {context['campaign_name']}\n")
    assert context["description"] in readme
    assert f"<{context['owner_email']}>" in readme
    assert context["notify_email"] in playbook
    assert f"{context['cloud_budget_usd']} USD" in agents
    assert f"{context['hpc_allocation_cap_percent']}%" in agents
    smoke = context["smoke_backend"]
    assert f"`{smoke}`" in agents
    assert f"smoke backend [`{smoke}`](backends/{smoke}.md)" in playbook
    assert ("committed and pushed" in playbook) == (context["require_pushed"] == "yes")
    assert ("no rented GPU may be used" in agents) == (float(context["cloud_budget_usd"]) == 0)


def test_ci_rows_follow_the_answer(case: tuple[dict[str, str], dict[str, str]]) -> None:
    context, texts = case
    readme = texts["README.md"]
    assert ("`.github/workflows/`" in readme) == (context["ci"] in ("github", "both"))
    assert ("`.gitlab-ci.yml`" in readme) == (context["ci"] in ("gitlab", "both"))


def test_backend_kinds_get_their_own_commands(case: tuple[dict[str, str], dict[str, str]]) -> None:
    context, texts = case
    chosen = set(context["backends"].split(","))
    playbook = texts["HPC_PLAYBOOK.md"]
    kinds = {
        "sacct -j": {"alpine", "generic-slurm"},
        "qstat -x -f -F json": {"polaris", "crux", "generic-pbs"},
        "tmux ls": {"vast-ai", "runpod", "lambda", "generic-ssh"},
        "kubectl logs job/": {"kubernetes"},
        "### Local:": {"local"},
    }
    for marker, members in kinds.items():
        assert (marker in playbook) == bool(members & chosen), marker


def test_smoke_definition_follows_the_domain(case: tuple[dict[str, str], dict[str, str]]) -> None:
    context, texts = case
    playbook = texts["HPC_PLAYBOOK.md"]
    signs = {"md": "ns/day", "ml-training": "steps/s", "quantum-chemistry": "SCF"}
    for domain, sign in signs.items():
        assert (sign in playbook) == (context["domain"] == domain), domain


def test_rented_smoke_backend_needs_a_person() -> None:
    agents = render("AGENTS.md", answers(backends="vast-ai,alpine", smoke_backend="vast-ai"))
    assert "is a rented GPU" in agents
    agents = render("AGENTS.md", answers(backends="vast-ai,alpine", smoke_backend="alpine"))
    assert "is a rented GPU" not in agents


def test_lessons_has_the_format_and_no_entries() -> None:
    text = render("LESSONS.md", answers())
    assert f"`{lessons.FORMAT}`" in text
    assert text.endswith(f"\n{lessons.SECTION}\n")
    assert list(lessons.scan(text)) == []


# --- the helpers catch what they are meant to catch ------------------------------------------


def test_command_extraction_sees_code_only() -> None:
    text = (
        "The campaign repository is yours; campaign diagnose in prose is not code.\n"
        "Run `campaign check --fix` and `campaign.yaml` is a file.\n"
        "```bash\ncampaign lesson add 'x'\nmy-campaign status\n```\n"
    )
    assert campaign_commands(text) == {"check", "lesson"}


def test_subcommand_probe() -> None:
    assert is_cli_subcommand("check")
    assert is_cli_subcommand("render")
    assert is_cli_subcommand("diagnose")
    assert not is_cli_subcommand("explain")


def test_stamp_problems_are_reported() -> None:
    assert stamp_problems("Sources: x (verified slurm.schedmd.com 2026-11).\n") == []
    assert len(stamp_problems("verified 2026-13\n")) == 1
    assert "stale" in stamp_problems("verified example.org 2025-01\n")[0]
    assert "future" in stamp_problems("verified 2027-01\n")[0]


def test_page_mentions_are_exact() -> None:
    text = "[`generic-slurm`](backends/generic-slurm.md) and backends/TEMPLATE.md"
    assert linked_backends(text) == {"generic-slurm"}
    assert mentioned_pages(text) == {"generic-slurm"}


@pytest.mark.parametrize("name", [b for b in ALL_BACKENDS if b.startswith("generic-")])
def test_the_playbook_tree_sends_work_to_every_scheduler_page(name: str) -> None:
    # A campaign whose only cluster is this page: the tree must send production to it, and the
    # playbook must show its scheduler's own commands (Grid Engine was missing from both).
    text = render("HPC_PLAYBOOK.md", answers(backends=f"{name},local", smoke_backend=name))
    assert "no HPC or rented backend is authorized" not in text
    tree = text[text.index("## 1. Pick a backend") : text.index("## 2. The stages")]
    assert f"(backends/{name}.md)" in tree.split("3. **", 1)[1]
    commands = text[text.index("## 3. The backends' own commands") :]
    assert f"[`{name}`](backends/{name}.md)" in commands.split("## 4.", 1)[0]
