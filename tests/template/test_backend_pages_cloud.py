"""Backend pages for rented clouds, bare SSH, Kubernetes and the local backend, plus TEMPLATE.md.

Each page is rendered the way both engines render it (plain Jinja, ``keep_trailing_newline``,
the answers under ``cookiecutter``) and then read with the package's own parsers:

- the file name renders to ``<backend>.md`` when the backend is chosen and to nothing otherwise;
- the front matter is valid against the backend schema, ``platform`` is the page name, ``kind``
  is the expected one, and every ``sources`` entry is a URL;
- there is a smoke tier: a ``partitions`` (or ``queues``) entry with ``purpose: smoke``. Rented
  clouds, bare SSH boxes and Kubernetes have no scheduler partitions; there each entry is an
  *instance class* the campaign defines (TEMPLATE.md documents the mapping), so a cloud page
  must carry one in ``partitions``; the local backend has exactly one, ``default``;
- no stamp is malformed and none is dated after ``TODAY``;
- **the stamp rule for prose**. The body (after the front matter, fenced code skipped) is cut
  into *units*: a paragraph between blank lines, except that every list item (``-``, ``*``,
  ``+``, ``1.``) and every table row starts a unit of its own; headings are exempt. A unit
  *states a figure* when, once its stamps, link targets, URLs and list marker are removed, it
  still contains a number (digits not glued to a letter or a slash: ``30 seconds``, ``(2)``,
  ``4048``; not ``A100``, ``sha256``, ``24/7``, a section
  reference ``§7``), a price (``$0.20``, ``5 USD``) or a
  command-line flag (``--partial``, ``-L``). Every unit that states a figure must contain a
  well-formed stamp (``campaignops.model.stamps``). The rule is tested on its own below, so a page
  cannot pass by a weakened checker.

TEMPLATE.md is a copy source, not a backend: its placeholders (``<…>``, ``YYYY-MM``) must be
exactly what stands between it and a valid page.
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
MAX_LINES = 140  # "under ~120 lines" of prose, plus the front matter's sources

KINDS = {
    "vast-ai": "ssh",  # rented GPU boxes: the ssh backend runs them
    "runpod": "ssh",
    "lambda": "ssh",
    "generic-ssh": "ssh",
    "kubernetes": "kubernetes",
    "local": "local",
}
PROFILE_KEYS = (
    "platform",
    "kind",
    "meter_stop_verb",
    "meter_stop_irreversible",
    "detach_primitive",
    "spot_available",
    "spot_grace",
    "shared_fs",
    "inode_cap",
    "free_egress",
    "host_driver_cuda_max",
    "local_nvme",
    "scheduler",
    "partitions",
    "accounts",
    "sources",
    "verified",
)


def answers(backends: str) -> dict[str, str]:
    first = backends.split(",")[0]
    return {
        "campaign_name": "Test campaign",
        "campaign_slug": "test-campaign",
        "description": "A test.",
        "owner_name": "Ada Lovelace",
        "owner_email": "ada@example.org",
        "notify_email": "ada@example.org",
        "backends": backends,
        "smoke_backend": first,
        "domain": "ml-training",
        "ci": "github",
        "stale_after_months": "6",
        "cloud_budget_usd": "200",
        "hpc_allocation_cap_percent": "80",
        "require_pushed": "yes",
    }


ENV = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
ALL = ",".join(KINDS)


def render(source: str, backends: str = ALL) -> str:
    return ENV.from_string(source).render(cookiecutter=answers(backends))


def page_source(name: str) -> tuple[Path, str]:
    """The template file whose name renders to ``<name>.md`` when every backend is chosen."""
    hits = [p for p in BACKENDS_DIR.iterdir() if render(p.name) == f"{name}.md"]
    assert len(hits) == 1, f"expected one template file rendering to {name}.md, found {hits}"
    return hits[0], hits[0].read_text(encoding="utf-8")


def front(text: str, path: str) -> Any:
    fm = frontmatter.split(text)
    assert fm is not None, f"{path}: no front matter"
    return yamldoc.load(fm.text, path=path)


# --- the prose stamp rule ----------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_STAMP_SPAN = re.compile(r"(?is)\bverified\b.{0,400}?\b\d{4}-\d{2}(?:-\d{2})?\b")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
_URL = re.compile(r"https?://\S+")
_NUMBER = re.compile(r"(?<![\w./§-])\d+(?:[.,]\d+)*(?![\w/])")
_PRICE = re.compile(r"\$\s?\d|\d\s?(?:USD|usd)\b")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


def units(body: str) -> list[tuple[int, str]]:
    """(first line number, text) of each prose unit of a Markdown body; headings and fenced
    code are left out."""
    out: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    in_fence = False

    def flush() -> None:
        if current:
            out.append((start, "\n".join(current)))
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
    text = _ITEM.sub("", text, count=1)
    return bool(_NUMBER.search(text) or _PRICE.search(text) or _FLAG.search(text))


def unstamped_figures(body: str) -> list[tuple[int, str]]:
    bad = []
    for number, unit in units(body):
        if not states_figure(unit):
            continue
        found = stamps.find_stamps(unit)
        if not any(not s.malformed for s in found):
            bad.append((number, unit))
    return bad


@pytest.mark.parametrize(
    "unit",
    [
        "A stopped disk bills at $0.20 per GB-month.",
        "Spot pods get 5 seconds between SIGTERM and SIGKILL.",
        "- Use `rsync --partial` so a reset transfer resumes.",
        "Run `ssh -L 6006:localhost:6006 box` for TensorBoard.",
        "The back-off limit defaults to six (10 s, 20 s, 40 s …).",
        "Billing stops (verified 2026-13) at terminate after 1 minute.",
        "Each instance is billed in 1-minute increments, see [docs](https://docs.lambda.ai/x).",
    ],
)
def test_rule_flags_unstamped_figures(unit: str) -> None:
    assert unstamped_figures(unit) != [], unit


@pytest.mark.parametrize(
    "unit",
    [
        "Spot pods get 5 seconds between SIGTERM and SIGKILL (verified docs.runpod.io 2026-11).",
        "- Use `rsync --partial`; a reset transfer resumes\n  (verified rsync.samba.org 2026-11).",
        "Rent an A100 box, checksum with sha256, mind the bill 24/7.",
        "Nothing reclaims the box; teardown is yours.",
        "See [the billing page](https://docs.vast.ai/billing-help) before renting.",
        "```\nkill -TERM -- -1234\n```",
        "## Step 2: detach",
    ],
)
def test_rule_accepts_stamped_or_figureless_units(unit: str) -> None:
    assert unstamped_figures(unit) == [], unit


def test_units_split_list_items_and_skip_code() -> None:
    body = "Intro line\nsecond line\n\n- one 1\n- two\n  cont\n\n```\n3 --x\n```\n| a | 4 |\n"
    assert units(body) == [
        (1, "Intro line\nsecond line"),
        (4, "- one 1"),
        (5, "- two\n  cont"),
        (11, "| a | 4 |"),
    ]


# --- the pages ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KINDS))
def test_file_name_is_conditional(name: str) -> None:
    path, _ = page_source(name)
    others = ",".join(b for b in KINDS if b != name)
    assert render(path.name, backends=others) == ""
    assert render(path.name, backends=name) == f"{name}.md"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_front_matter(name: str) -> None:
    _, source = page_source(name)
    data = front(render(source), f"backends/{name}.md")
    errors = [e.message for e in schema.validate(schema.BACKEND, data)]
    assert errors == [], errors
    assert data["platform"] == name
    assert data["kind"] == KINDS[name]
    missing = [k for k in PROFILE_KEYS if k not in data]
    assert missing == [], f"{name}.md lacks {missing}"
    assert data["sources"], "a page names its sources"
    assert all(str(s).startswith("https://") for s in data["sources"]), data["sources"]


@pytest.mark.parametrize("name", sorted(KINDS))
def test_smoke_tier(name: str) -> None:
    _, source = page_source(name)
    data = front(render(source), f"backends/{name}.md")
    tiers = list(data.get("partitions", [])) + list(data.get("queues", []))
    smoke = [t for t in tiers if t["purpose"] == "smoke"]
    assert smoke, f"{name}.md has no smoke partition/queue/instance class"
    if KINDS[name] == "ssh":
        assert any(t["purpose"] == "smoke" for t in data["partitions"])
    if name == "local":
        assert [t["name"] for t in data["partitions"]] == ["default"]
        assert data["partitions"][0]["purpose"] == "smoke"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_stamps_well_formed_and_present(name: str) -> None:
    _, source = page_source(name)
    text = render(source)
    found = stamps.markdown_stamps(text)
    assert [s.raw for s in found if s.malformed] == []
    assert [s.raw for s in found if stamps.is_future(s, TODAY)] == []
    body_stamps = [s for s in found if not s.key_line]
    assert len(body_stamps) >= 5, f"{name}.md: facts in the prose need their stamps"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_figure_in_prose_is_stamped(name: str) -> None:
    _, source = page_source(name)
    text = render(source)
    fm = frontmatter.split(text)
    assert fm is not None
    closing = fm.first_line + fm.text.count("\n")  # line of the closing ---
    body = "\n".join(text.split("\n")[closing:])
    bad = [(n + closing, u.split("\n")[0]) for n, u in unstamped_figures(body)]
    assert bad == [], f"{name}.md: units stating a figure without a stamp: {bad}"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_page_is_short_and_plain(name: str) -> None:
    _, source = page_source(name)
    text = render(source)
    assert len(text.splitlines()) <= MAX_LINES
    assert text.endswith("\n") and "\r" not in text
    for marker in ("{{", "{%", "{#"):
        assert marker not in text, f"{name}.md renders a literal {marker!r}"


# --- TEMPLATE.md -------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"<[a-z][a-z0-9 ,/-]*>")


def template_text() -> str:
    path = BACKENDS_DIR / "TEMPLATE.md"
    assert render(path.name) == "TEMPLATE.md", "TEMPLATE.md is always rendered"
    return render(path.read_text(encoding="utf-8"))


def test_template_is_valid_once_filled_in() -> None:
    text = template_text()
    fm = frontmatter.split(text)
    assert fm is not None
    raw = yamldoc.load(fm.text, path="backends/TEMPLATE.md")
    assert [k for k in PROFILE_KEYS if k not in raw] == []
    # As shipped it is not a valid page: the placeholders must be filled in first.
    assert list(schema.validate(schema.BACKEND, raw)) != []
    filled = _PLACEHOLDER.sub("example", fm.text).replace("YYYY-MM", "2026-11")
    data = yamldoc.load(filled, path="backends/TEMPLATE.md")
    errors = [e.message for e in schema.validate(schema.BACKEND, data)]
    assert errors == [], errors
    assert any(p["purpose"] == "smoke" for p in data["partitions"])


def test_template_documents_instance_classes() -> None:
    text = template_text().lower()
    for phrase in ("instance class", "purpose: smoke", "not confirmed", "verified yyyy-mm"):
        assert phrase in text, phrase
    assert len(text.splitlines()) <= MAX_LINES


def test_lambda_says_which_api_host_the_sources_give_and_that_both_are_in_use() -> None:
    # Issue 23's audit: the page had the host "still" on lambdalabs.com from a 2026-06 stamp of a
    # second-hand profile; it now names the sources read and keeps the current reference open.
    _, source = page_source("lambda")
    text = render(source)
    assert "verified docs.lambda.ai + cloud-api 2026-06" not in text
    assert (
        "https://cloud.lambdalabs.com/api/v1" in text and "https://cloud.lambda.ai/api/v1" in text
    )
    assert "## Not confirmed" in text
