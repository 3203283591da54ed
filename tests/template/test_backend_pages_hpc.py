"""Backend pages for the HPC backends: alpine, polaris, crux, generic-slurm, generic-pbs.

Each page is rendered as both engines render it (plain Jinja, no extensions, trailing newline
kept, the answers under ``cookiecutter``) and read back with the package's own parsers:

- the file name renders to ``<backend>.md`` when the backend is chosen, to nothing otherwise;
- the front matter is valid against the backend schema, ``platform`` is the page name, ``kind``
  and ``scheduler`` match, ``verified`` is 2026-11, and the scheduler's list (``partitions`` on
  Slurm, ``queues`` on PBS) has an entry with ``purpose: smoke``;
- no stamp is malformed, except on the generic pages, whose site facts carry the literal
  placeholder ``verified YYYY-MM`` on purpose (``campaign check`` reports it as STALE002 until the
  user fills the fact in); there, every malformed stamp must be that placeholder and there must
  be some. No stamp is dated after TODAY or older than the default policy allows (6 months);
- **the stamp rule for prose**. The body (after the front matter) is cut into *units*: a
  paragraph between blank lines, except that every list item (``-``, ``*``, ``+``, ``1.``) and
  every table row starts a unit of its own, because each is a separate fact. Headings and fenced
  code are not prose: code blocks are idioms, and the facts they rely on are stated (and stamped)
  in the prose around them. A unit *states a figure* when, after removing its stamps, URLs and
  link targets, list marker and the ``campaign …`` code spans (this tool's own interface, not a
  backend fact), it still contains a number (digits not glued to a letter, digit, ``_``, ``.``,
  ``/``, ``-`` or ``#``: ``24 h``, ``1,000``, ``3.8 GB``; not ``A100``, ``a100_3g.20gb``,
  ``crux-login-01``) or a command-line flag (``--array``, ``-J``, ``-l``). Every such unit must
  contain a stamp (a well-formed one; on generic pages the placeholder counts too), unless it
  says "not confirmed" or stands under a "Not confirmed" heading: that is how a page marks a fact
  it could not check. The rule itself is
  tested on hand-written units first, so a page cannot pass through a weakened checker.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import jinja2
import pytest

from campaignops.core import schema, yamldoc
from campaignops.model import frontmatter, stamps

BACKENDS_DIR = (
    Path(__file__).resolve().parents[2] / "template" / "{{cookiecutter.campaign_slug}}" / "backends"
)
TODAY = dt.date(2026, 11, 21)
STALE_AFTER_MONTHS = 6
MAX_LINES = 165  # "under ~150 lines", with a little slack

PAGES = {  # name -> (kind, list of scheduler tiers)
    "alpine": ("slurm", "partitions"),
    "polaris": ("pbs", "queues"),
    "crux": ("pbs", "queues"),
    "generic-slurm": ("slurm", "partitions"),
    "generic-pbs": ("pbs", "queues"),
}
GENERIC = ("generic-slurm", "generic-pbs")
PLACEHOLDER = "verified YYYY-MM"
SLUG = "demo-campaign"
NOTIFY = "ops@example.org"


def answers(backends: str) -> dict[str, str]:
    return {
        "campaign_name": "Demo campaign",
        "campaign_slug": SLUG,
        "description": "A test.",
        "owner_name": "Ada Lovelace",
        "owner_email": "ada@example.org",
        "notify_email": NOTIFY,
        "backends": backends,
        "smoke_backend": backends.split(",")[0],
        "domain": "md",
        "ci": "github",
        "stale_after_months": str(STALE_AFTER_MONTHS),
        "cloud_budget_usd": "0",
        "hpc_allocation_cap_percent": "80",
        "require_pushed": "yes",
    }


ENV = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
ALL = ",".join([*PAGES, "local"])


def render(source: str, backends: str = ALL) -> str:
    return ENV.from_string(source).render(cookiecutter=answers(backends))


def page(name: str) -> tuple[Path, str]:
    """The template file whose name renders to ``<name>.md``, and its rendered text."""
    hits = [p for p in BACKENDS_DIR.iterdir() if render(p.name) == f"{name}.md"]
    assert len(hits) == 1, f"expected one template file rendering to {name}.md, found {hits}"
    return hits[0], render(hits[0].read_text(encoding="utf-8"))


def front(text: str, path: str) -> Any:
    fm = frontmatter.split(text)
    assert fm is not None, f"{path}: no front matter"
    return yamldoc.load(fm.text, path=path)


def body_of(text: str) -> tuple[int, str]:
    """(line offset, body): the text after the closing ``---`` of the front matter."""
    closing = stamps.front_matter_end(text)
    assert closing, "no closing --- after the front matter"
    return closing, "\n".join(text.split("\n")[closing:])


# --- the checks, as pure functions of a rendered page -------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_STAMP_SPAN = re.compile(r"(?is)\bverified\b.{0,400}?(?:\b\d{4}-\d{2}(?:-\d{2})?\b|YYYY-MM)")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
_URL = re.compile(r"https?://\S+")
_OWN_COMMAND = re.compile(r"`campaign [^`]*`")
_NUMBER = re.compile(r"(?<![\w./#-])\d+(?:[.,]\d+)*(?![\w/])")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def units(body: str) -> list[tuple[int, str, str]]:
    """(first line, text, heading above it) of each prose unit of a Markdown body; headings
    and fenced code are left out."""
    out: list[tuple[int, str, str]] = []
    current: list[str] = []
    start = 0
    heading = ""
    in_fence = False

    def flush() -> None:
        if current:
            out.append((start, "\n".join(current), heading))
            current.clear()

    for number, line in enumerate(body.split("\n"), 1):
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            flush()
            if line.lstrip().startswith("#"):
                heading = line.strip("# \t")
            continue
        if _ITEM.match(line) or line.lstrip().startswith("|"):
            flush()
        if not current:
            start = number
        current.append(line)
    flush()
    return out


def states_figure(unit: str) -> bool:
    text = _STAMP_SPAN.sub(" ", unit)
    text = _LINK_TARGET.sub("]", text)
    text = _URL.sub(" ", text)
    text = _OWN_COMMAND.sub(" ", text)
    text = _ITEM.sub("", text, count=1)
    return bool(_NUMBER.search(text) or _FLAG.search(text))


def unstamped_figures(body: str, *, placeholders_count: bool = False) -> list[tuple[int, str]]:
    """Units that state a figure with no stamp and do not say "not confirmed"."""
    bad = []
    for number, unit, heading in units(body):
        unconfirmed = "not confirmed" in f"{heading}\n{unit}".lower()
        if unconfirmed or not states_figure(unit):
            continue
        found = stamps.find_stamps(unit)
        ok = [s for s in found if not s.malformed or (placeholders_count and s.raw == PLACEHOLDER)]
        if not ok:
            bad.append((number, unit))
    return bad


def problems(name: str, text: str) -> list[str]:
    """Everything wrong with the rendered page ``backends/<name>.md``; empty when it is fine."""
    out: list[str] = []
    kind, tiers_key = PAGES[name]
    fm = frontmatter.split(text)
    if fm is None:
        return ["no front matter"]
    data = yamldoc.load(fm.text, path=f"backends/{name}.md")
    out += [f"schema: {e.message}" for e in schema.validate(schema.BACKEND, data)]
    if not isinstance(data, dict):
        return out
    if data.get("platform") != name:
        out.append(f"platform is {data.get('platform')!r}")
    if data.get("kind") != kind or data.get("scheduler") != kind:
        out.append(f"kind/scheduler is {data.get('kind')!r}/{data.get('scheduler')!r}")
    if data.get("verified") != "2026-11":
        out.append(f"front matter verified is {data.get('verified')!r}")
    tiers = data.get(tiers_key) or []
    if not any(isinstance(t, dict) and t.get("purpose") == "smoke" for t in tiers):
        out.append(f"no {tiers_key} entry with purpose: smoke")
    found = stamps.markdown_stamps(text)
    malformed = [s.raw for s in found if s.malformed]
    if name in GENERIC:
        out += [f"malformed stamp {r!r}" for r in malformed if r != PLACEHOLDER]
        if not malformed:
            out.append("no placeholder stamps: site facts must be flagged until filled in")
    else:
        out += [f"malformed stamp {r!r}" for r in malformed]
    for s in found:
        if s.date is None:
            continue
        if stamps.is_future(s, TODAY):
            out.append(f"future stamp {s.raw!r}")
        elif stamps.age_in_months(s.date, TODAY) > STALE_AFTER_MONTHS:
            out.append(f"stale stamp {s.raw!r}")
    offset, body = body_of(text)
    for number, unit in unstamped_figures(body, placeholders_count=name in GENERIC):
        out.append(f"line {number + offset}: unstamped figure: {unit.splitlines()[0]}")
    return out


# --- the rule on its own ------------------------------------------------------------------


@pytest.mark.parametrize(
    "unit",
    [
        "The debug queue allows 2 nodes for 1 h.",
        "- Fan-out: `sbatch --array=0-99%8` runs 100 cells.",
        "| `atesting` | `testing` | 1 h | 5 jobs |",
        "Add `-W depend=afterok:<jobid>` to chain phases.",
        "Scratch is purged after 90 days (verified 2026-13).",
        "Wall time is 24 h; see [docs](https://docs.alcf.anl.gov/polaris/) for 3.8 GB.",
    ],
)
def test_rule_flags_unstamped_figures(unit: str) -> None:
    assert unstamped_figures(unit) != [], unit


@pytest.mark.parametrize(
    "unit",
    [
        "The debug queue allows 2 nodes (verified docs.alcf.anl.gov/polaris/running-jobs/ 2026-11).",
        "- Fan-out: `sbatch --array=0-99%8` runs 100 cells\n  (verified slurm.schedmd.com 2026-11).",
        "Nodes have four A100 GPUs and an a100_3g.20gb slice; log in to crux-login-01.",
        "- Whether `%8` works on `-J` here is not confirmed.",
        "## Not confirmed\n\n- Alpine's `KillWait`: run `scontrol show config`.",
        "`campaign submit --dry-run` prints the script.",
        "```\n#SBATCH --time=00:20:00\n```",
        "## Step 2: submit",
    ],
)
def test_rule_accepts_stamped_or_figureless_units(unit: str) -> None:
    assert unstamped_figures(unit) == [], unit


def test_placeholders_count_only_where_allowed() -> None:
    unit = "- Smoke partition walltime: 1 h (FILL IN, verified YYYY-MM)."
    assert unstamped_figures(unit) != []
    assert unstamped_figures(unit, placeholders_count=True) == []


def test_units_split_items_and_rows_and_skip_code() -> None:
    body = "Intro 1\nsecond line\n\n- one 1\n- two\n  cont\n\n```\n3 --x\n```\n| a | 4 |\n| b |\n"
    assert units(body) == [
        (1, "Intro 1\nsecond line", ""),
        (4, "- one 1", ""),
        (5, "- two\n  cont", ""),
        (11, "| a | 4 |", ""),
        (12, "| b |", ""),
    ]
    assert units("## Not confirmed\n\n- x 1\n") == [(3, "- x 1", "Not confirmed")]


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("alpine", "verified: 2026-11\n---", "---"),  # front matter lost its stamp
        ("polaris", "platform: polaris", "platform: polaris-x"),
        ("crux", "purpose: smoke", "purpose: debug"),
        (
            "alpine",
            "arrive (verified\n  curc.readthedocs.io/en/latest/compute/filesystems.html 2026-11)",
            "arrive",
        ),
        ("polaris", "2026-11).", "2026-13)."),
        ("crux", "2026-11).", "2025-11)."),
        ("generic-slurm", "verified YYYY-MM", "verified 2026-6"),
        ("generic-pbs", "verified YYYY-MM", "verified 2027-01"),
    ],
)
def test_problems_catches_a_broken_page(name: str, old: str, new: str) -> None:
    _, text = page(name)
    assert old in text, f"mutation target {old!r} not in {name}.md"
    assert problems(name, text.replace(old, new, 1)) != []


def test_problems_catches_generic_page_without_placeholders() -> None:
    _, text = page("generic-slurm")
    assert problems("generic-slurm", text.replace(PLACEHOLDER, "verified 2026-11")) != []


# --- the pages ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAGES))
def test_file_name_is_conditional(name: str) -> None:
    path, _ = page(name)
    others = ",".join(b for b in [*PAGES, "local"] if b != name)
    assert render(path.name, backends=others) == ""
    assert render(path.name, backends=f"local,{name}") == f"{name}.md"
    # A longer name that merely contains this one does not select the page.
    assert render(path.name, backends=f"{name}x") == ""


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_has_no_problems(name: str) -> None:
    _, text = page(name)
    assert problems(name, text) == []


@pytest.mark.parametrize("name", sorted(PAGES))
def test_front_matter_details(name: str) -> None:
    _, text = page(name)
    data = front(text, f"backends/{name}.md")
    for key in ("submit_host", "meter_stop_verb", "detach_primitive", "spot_available"):
        assert key in data, f"{name}.md lacks {key}"
    for key in ("spot_grace", "shared_fs", "accounts", "sources"):
        assert key in data, f"{name}.md lacks {key}"
    assert data["sources"], "a page names its sources"
    assert all(str(s).startswith("https://") for s in data["sources"])
    tiers = data[PAGES[name][1]]
    if name in GENERIC:
        assert [t["name"] for t in tiers] == ["debug", "compute"]
    else:
        assert all("max_walltime" in t for t in tiers), "real tiers carry their walltime"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_smoke_idiom(name: str) -> None:
    _, text = page(name)
    kind = PAGES[name][0]
    assert f"{SLUG}.<target>.smoke" in text, "job name is <campaign>.<target>.<stage>"
    assert NOTIFY in text, "scheduler mail goes to notify_email"
    if kind == "slurm":
        for piece in ("--mail-type=END,FAIL", "--signal=B:USR1@360", "--requeue", "--array=0-"):
            assert piece in text, piece
        assert "--dependency=afterok:" in text
    else:
        for piece in ("#PBS -m ae", "#PBS -M ", "-l walltime=", "#PBS -q ", "#PBS -A ", "-J 0-"):
            assert piece in text, piece
        assert "-W depend=afterok:" in text
        if name != "generic-pbs":
            assert "-l filesystems=" in text


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_is_short_and_plain(name: str) -> None:
    _, text = page(name)
    assert len(text.splitlines()) <= MAX_LINES
    assert text.endswith("\n") and "\r" not in text
    for marker in ("{{", "{%", "{#"):
        assert marker not in text, f"{name}.md renders a literal {marker!r}"
    assert "## Not confirmed" in text
    assert "## Gotchas" in text or name in GENERIC


# --- issue 23's knowledge audit: the facts it found wrong stay corrected ------------------


@pytest.mark.parametrize("name", ["alpine", "generic-slurm"])
def test_srun_cpus_per_task_rule_names_the_versions_it_holds_for(name: str) -> None:
    # Slurm 23.11 restored the inheritance 22.05 removed (CHANGELOG/slurm-23.11.md).
    _, text = page(name)
    assert "22.05 and later" not in text
    assert "22.05 to 23.02" in text and "23.11" in text


def test_alpine_lists_the_gh200_partition_on_request() -> None:
    path, text = page("alpine")
    tiers = {t["name"]: t for t in front(text, str(path))["partitions"]}
    assert tiers["gh200"]["qos"] == "gh200" and "request" in tiers["gh200"]["notes"]


def test_polaris_tells_backfill_from_rejection() -> None:
    _, text = page("polaris")
    assert "a negative balance\n  sends `prod` jobs to the backfill queues" not in text
    assert "sub-allocation" in text and "jobs rejected" in text and "DD project" in text


def test_crux_no_longer_asks_whether_alcf_accepts_the_array_throttle() -> None:
    _, text = page("crux")
    assert "Whether ALCF's PBS accepts the `%8` concurrency limit" not in text
    assert "-J <start>-<end>:<skip>%<num_concurrent>" in text
