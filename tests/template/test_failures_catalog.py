"""The template's failure catalog: rendered for every domain, checked entry by entry.

The catalog is a Jinja template (domain entries sit in `{% if cookiecutter.domain == ... %}`
blocks), so each test renders it with a plain Jinja environment, as both engines do, and
inspects the YAML that a generated campaign would hold.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import jinja2
import pytest

from campaignops.core import schema, yamldoc
from campaignops.model.stamps import find_stamps

try:  # the stdlib regex parser moved into the re package in Python 3.11
    import re._constants as _C  # type: ignore[import-not-found,unused-ignore]
    import re._parser as _PARSER  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _C  # type: ignore[no-redef,unused-ignore]
    import sre_parse as _PARSER  # type: ignore[no-redef,unused-ignore]

_REPEATS = tuple(
    getattr(_C, name)
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(_C, name)
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template" / "{{cookiecutter.campaign_slug}}" / "failures.yaml"
DOMAINS = ("other", "md", "ml-training", "quantum-chemistry")
SPECIFIC_DOMAINS = ("md", "ml-training", "quantum-chemistry")
MIN_COMMON_ENTRIES = 40
MIN_DOMAIN_ENTRIES = 3
# The matching engine (`campaign diagnose`) tries every entry on every line, case-insensitively
# (docs/formats.md "The failure catalog"); the checks below compile matchers the same way.
FLAGS = re.IGNORECASE
# Each backend-specific group of entries names only backends of its kind.
SLURM = {"alpine", "generic-slurm"}
PBS = {"polaris", "crux", "generic-pbs"}
GRIDENGINE = {"generic-gridengine"}
KNOWN_BACKENDS = (
    SLURM | PBS | GRIDENGINE | {"kubernetes", "generic-ssh", "vast-ai", "runpod", "lambda", "local"}
)
YEAR_MONTH = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])\Z")
URL = re.compile(r"https://\S+")

Entry = dict[str, Any]


@functools.cache
def render(domain: str) -> str:
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        cookiecutter={"domain": domain}
    )


def catalog(domain: str) -> dict[str, Any]:
    data: dict[str, Any] = yamldoc.load(render(domain), path="failures.yaml")
    return data


def entries(domain: str) -> list[Entry]:
    found: list[Entry] = catalog(domain)["failures"]
    return found


# --- checks, as functions so their own tests can feed them broken catalogs ---------------------


def bad_matchers(items: Iterable[Entry]) -> list[str]:
    """Matchers that do not compile, or that match none of their own entry's samples."""
    problems = []
    for e in items:
        for pattern in e["matchers"]:
            try:
                rx = re.compile(pattern, FLAGS)
            except re.error as exc:
                problems.append(f"{e['id']}: {pattern!r} does not compile ({exc})")
                continue
            if not any(rx.search(s) for s in e.get("samples") or ()):
                problems.append(f"{e['id']}: {pattern!r} matches none of the entry's samples")
    return problems


def unmatched_samples(items: Iterable[Entry]) -> list[str]:
    """Samples that no matcher of their own entry matches (POLICY004's rule, restated)."""
    problems = []
    for e in items:
        rxs = [re.compile(p, FLAGS) for p in e["matchers"]]
        for s in e.get("samples") or ():
            if not any(rx.search(s) for rx in rxs):
                problems.append(f"{e['id']}: sample {s!r} is matched by none of its matchers")
    return problems


def apart_by_backend(a: Entry, b: Entry) -> bool:
    """True when the two entries can never be tried on the same log: both are restricted to
    backends, and no backend is in both lists."""
    mine, theirs = set(a.get("backends") or ()), set(b.get("backends") or ())
    return bool(mine) and bool(theirs) and mine.isdisjoint(theirs)


def overlaps(items: Sequence[Entry]) -> set[tuple[str, str]]:
    """(a, b) for every entry a with a matcher that matches a sample of another entry b, where
    both can be tried on the same log (see apart_by_backend)."""
    found = set()
    for a in items:
        rxs = [re.compile(p, FLAGS) for p in a["matchers"]]
        for b in items:
            if b["id"] == a["id"] or apart_by_backend(a, b):
                continue
            if any(rx.search(s) for rx in rxs for s in b.get("samples") or ()):
                found.add((a["id"], b["id"]))
    return found


def _has_nested_repeat(tree: Any, inside_repeat: bool) -> bool:
    # Walks the stdlib's own parse tree (what the engine runs), so nesting is judged on the
    # pattern's structure rather than on its text.
    for op, arg in tree:
        if op in _REPEATS:
            _low, high, sub = arg
            unbounded = high is _C.MAXREPEAT or high > 1
            if unbounded and inside_repeat:
                return True
            if _has_nested_repeat(sub, inside_repeat or unbounded):
                return True
        elif op is _C.SUBPATTERN:
            if _has_nested_repeat(arg[-1], inside_repeat):
                return True
        elif op is _C.BRANCH:
            if any(_has_nested_repeat(alt, inside_repeat) for alt in arg[1]):
                return True
        elif op in (_C.ASSERT, _C.ASSERT_NOT) and _has_nested_repeat(arg[1], inside_repeat):
            return True
    return False


def nested_quantifiers(items: Iterable[Entry]) -> list[str]:
    """Matchers with a repeated group that itself contains a repeat, like (a+)+ or (\\w*\\s)*:
    the shape that backtracks exponentially on a long line that almost matches."""
    return [
        f"{e['id']}: {pattern!r} nests one repeat inside another"
        for e in items
        for pattern in e["matchers"]
        if _has_nested_repeat(_PARSER.parse(pattern, FLAGS), inside_repeat=False)
    ]


def duplicate_ids(items: Iterable[Entry]) -> list[str]:
    seen: set[str] = set()
    dupes = []
    for e in items:
        if e["id"] in seen:
            dupes.append(e["id"])
        seen.add(e["id"])
    return dupes


def category_vocabulary() -> set[str]:
    vocabulary: list[str] = schema.load(schema.FAILURES)["$defs"]["category"]["enum"]
    return set(vocabulary)


# --- the checks must be able to fail ------------------------------------------------------------

BROKEN: list[Entry] = [
    {"id": "a", "matchers": ["No space left"], "samples": ["No space left on device"]},
    {"id": "a", "matchers": ["(unclosed"], "samples": ["whatever"]},
    {"id": "c", "matchers": ["never matches"], "samples": ["No space left on device: x"]},
]


def test_checks_catch_a_broken_catalog() -> None:
    assert duplicate_ids(BROKEN) == ["a"]
    assert any("does not compile" in p for p in bad_matchers(BROKEN))
    assert any("'never matches' matches none" in p for p in bad_matchers(BROKEN))
    assert unmatched_samples([BROKEN[0], BROKEN[2]]) == [
        "c: sample 'No space left on device: x' is matched by none of its matchers"
    ]
    assert overlaps([BROKEN[0], BROKEN[2]]) == {("a", "c")}


def test_overlap_check_is_case_insensitive_and_respects_backends() -> None:
    # The engine ignores case, so a lower-case sample of another entry is still claimed.
    upper = {"id": "up", "matchers": ["CONNECTION RESET BY PEER"], "samples": ["ssh: gone"]}
    nccl = {"id": "nccl", "matchers": ["^socket:"], "samples": ["socket: connection reset by peer"]}
    assert overlaps([upper, nccl]) == {("up", "nccl")}
    # Entries restricted to disjoint backends never see the same log...
    slurm = {**upper, "backends": ["alpine"]}
    pbs = {**nccl, "backends": ["polaris"]}
    assert overlaps([slurm, pbs]) == set()
    # ...but an unrestricted entry is tried everywhere.
    assert overlaps([slurm, nccl]) == {("up", "nccl")}


@pytest.mark.parametrize(
    ("pattern", "nested"),
    [
        ("(a+)+", True),
        ("(?:\\w*\\s)*end", True),
        ("(?:x|(?:ab)+)*", True),
        ("(?!.*(?:ab)+c*)ok", False),
        ("tasks? [\\d,-]+: Out Of Memory", False),
        ("^(?!.*(?:\\binodes?\\b|Warning:)).*No space left on device", False),
        ("(?:CUDA|HIP) out of memory", False),
    ],
)
def test_nested_quantifier_check(pattern: str, nested: bool) -> None:
    entry = {"id": "e", "matchers": [pattern], "samples": []}
    assert bool(nested_quantifiers([entry])) is nested


# --- the catalog --------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_rendered_catalog_is_schema_valid(domain: str) -> None:
    data = catalog(domain)
    errors = [e.message for e in schema.validate(schema.FAILURES, data)]
    assert errors == []
    assert data["version"] == 1


def test_template_has_no_stray_jinja() -> None:
    raw = TEMPLATE.read_text(encoding="utf-8")
    assert "{{" not in raw and "{#" not in raw
    tags = re.findall(r"\{%-?\s*(.*?)\s*-?%\}", raw)
    allowed = {f"if cookiecutter.domain == '{d}'" for d in SPECIFIC_DOMAINS} | {"endif"}
    assert set(tags) <= allowed
    for domain in DOMAINS:
        text = render(domain)
        assert "{%" not in text and "%}" not in text
        assert text.endswith("\n") and not text.endswith("\n\n")


@pytest.mark.parametrize("domain", DOMAINS)
def test_ids_are_unique(domain: str) -> None:
    assert duplicate_ids(entries(domain)) == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_matcher_compiles_and_matches_one_of_its_samples(domain: str) -> None:
    items = entries(domain)
    assert all(e.get("samples") for e in items), "every entry carries samples"
    assert bad_matchers(items) == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_sample_is_matched_by_its_own_entry(domain: str) -> None:
    assert unmatched_samples(entries(domain)) == []


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_sample_is_claimed_by_its_own_entry_only(domain: str) -> None:
    # The catalog's invariant: with the engine's case-insensitive matching, a sample line is
    # matched by its own entry and by no other entry that could be tried on the same log, so
    # no sample's diagnosis depends on tie-breaking. Overlaps are fixed in the matchers (a
    # longer anchor, a lookahead), never allow-listed.
    items = entries(domain)
    assert unmatched_samples(items) == []
    assert overlaps(items) == set()


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_matcher_nests_quantifiers(domain: str) -> None:
    assert nested_quantifiers(entries(domain)) == []


def test_common_entries_are_enough_and_domain_free() -> None:
    common = entries("other")
    assert len(common) >= MIN_COMMON_ENTRIES
    assert all("domains" not in e for e in common)


@pytest.mark.parametrize("domain", SPECIFIC_DOMAINS)
def test_domain_entries_appear_only_for_their_domain(domain: str) -> None:
    common_ids = [e["id"] for e in entries("other")]
    mine = entries(domain)
    assert [e["id"] for e in mine[: len(common_ids)]] == common_ids
    extra = mine[len(common_ids) :]
    assert len(extra) >= MIN_DOMAIN_ENTRIES
    assert all(e.get("domains") == [domain] for e in extra)
    extra_ids = {e["id"] for e in extra}
    for other in DOMAINS:
        if other != domain:
            assert extra_ids.isdisjoint(e["id"] for e in entries(other))


def test_categories_cover_the_vocabulary() -> None:
    # The seeds' catalogs touch every category; the common entries alone must use each one.
    used = {e["category"] for e in entries("other")}
    assert used == category_vocabulary()


@pytest.mark.parametrize("domain", DOMAINS)
def test_entries_are_sourced_and_stamped(domain: str) -> None:
    items = entries(domain)
    for e in items:
        assert YEAR_MONTH.match(e["verified"]), e["id"]
        assert e["source"].strip(), e["id"]
        # The job script's own checks are sourced from this package's code, which they describe.
        own = e["source"].startswith("campaignops backends/script.py")
        assert URL.search(e["source"]) or "seed" in e["source"] or own, e["id"]
        for field in ("title", "symptom", "cause", "fix"):
            assert e.get(field, "").strip(), (e["id"], field)
    # The only stamps in the file are the entries' `verified:` keys: no prose in a symptom or
    # fix is misread as a stamp by STALE.
    stamps = find_stamps(render(domain), yaml_like=True)
    assert len(stamps) == len(items)
    assert all(s.key_line and s.date is not None for s in stamps)


@pytest.mark.parametrize("domain", DOMAINS)
def test_backend_lists_name_known_backends_of_one_kind(domain: str) -> None:
    for e in entries(domain):
        backends = set(e.get("backends") or ())
        assert backends <= KNOWN_BACKENDS, e["id"]
        if e["id"].startswith("slurm-"):
            assert backends == SLURM, e["id"]
        if e["id"].startswith("pbs-"):
            assert backends == PBS, e["id"]
        if e["id"].startswith("k8s-"):
            assert backends == {"kubernetes"}, e["id"]
        if e["id"].startswith("gridengine-"):
            assert backends == GRIDENGINE, e["id"]


@pytest.mark.parametrize("domain", DOMAINS)
def test_rendered_catalog_passes_campaign_check(
    domain: str,
    campaign: Path,
    run: Callable[..., Any],
) -> None:
    (campaign / "failures.yaml").write_text(render(domain), encoding="utf-8", newline="\n")
    result = run("check", "--select", "POLICY,STALE,EOL", "--format", "json")
    assert result.json()["findings"] == []
    assert result.code == 0


@pytest.mark.parametrize("domain", DOMAINS)
def test_check_flags_a_catalog_whose_sample_drifted(
    domain: str,
    campaign: Path,
    run: Callable[..., Any],
) -> None:
    # The same catalog with one sample edited away from its matcher must fail POLICY.
    text = render(domain).replace(
        "'[Errno 28] No space left on device'", "'[Errno 28] disk is full'", 1
    )
    assert text != render(domain)
    (campaign / "failures.yaml").write_text(text, encoding="utf-8", newline="\n")
    result = run("check", "--select", "POLICY", "--format", "json")
    assert result.code == 1
    assert result.ids() == ["POLICY004"]


def claimants(domain: str, line: str) -> set[str]:
    """Ids of the entries of a rendered catalog with a matcher that matches `line`."""
    return {
        e["id"] for e in entries(domain) if any(re.search(p, line, FLAGS) for p in e["matchers"])
    }


# Lines that the catalog misread before matching became case-insensitive and order-free
# (issue 9), with the one entry that must claim each (None: no entry may claim it).
MISREAD = [
    ("touch: cannot touch 'filename': No space left on device", "disk-full"),
    ("Message:  The node was low on resource: inodes. ", "inode-exhaustion"),
    ("run.sh: line 12: syntax error near unexpected token `('", "shell-syntax-error"),
    ("scripts/run_one.v2.sh: line 40: syntax error: unexpected EOF", "wrapper-edited-mid-run"),
    (
        "socketProgressOpt: Call to recv from 10.0.0.2<33759> failed : Connection reset by peer",
        None,
    ),
    ("rpc error: code = DeadlineExceeded desc = context deadline exceeded", None),
    ("grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded while calling Predict", None),
    ("srun: error: node7: tasks 1-3: Out Of Memory", "slurm-oom-kill"),
    ("slurmstepd: error: Detected 3 oom_kill events in StepId=42.batch.", "slurm-oom-kill"),
    ("Memory cgroup out of memory: Killed process 7 (python)", "oom-killer-cgroup"),
    ("UserWarning: [Errno 28] No space left on device.  joblib will operate in serial mode", None),
    ("{'loss': 1.2345, 'grad_norm': nan, 'learning_rate': 2e-05, 'epoch': 0.01}", None),
]


@pytest.mark.parametrize(("line", "entry"), MISREAD)
def test_lines_misread_before_reach_the_right_entry(line: str, entry: str | None) -> None:
    assert claimants("other", line) == ({entry} if entry else set())
