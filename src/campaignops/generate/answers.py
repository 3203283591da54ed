"""The template's questions and the rules their answers must follow.

One implementation for both engines: cookiecutter's pre-generation hook and `campaign new` call
``validate``; Copier cannot run package code without ``--trust``, so copier.yml carries the same
``RULES`` written out as Jinja validators by campaignops.generate.copier_rules (a test requires
copier.yml to hold exactly what it writes, and real Copier to give the same verdicts).
Answers are refused rather than escaped wherever they could reach a shell, YAML or a file name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

BACKENDS = (
    "alpine", "polaris", "crux", "vast-ai", "runpod", "lambda",
    "generic-slurm", "generic-pbs", "generic-gridengine", "generic-ssh", "kubernetes", "local",
)  # fmt: skip
DOMAINS = ("md", "ml-training", "quantum-chemistry", "other")
CI_CHOICES = ("github", "gitlab", "both", "none")
YES_NO = ("yes", "no")

# Each pattern must match the WHOLE answer (re.fullmatch here, ``\A(?:…)\Z`` in copier.yml):
# with ``^…$`` Python's ``$`` also matches before a final newline, so ``local\n`` passed.
SLUG = r"[a-z0-9][a-z0-9-]{0,62}"
EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
# Printable text without control characters (newlines included): answers land in Markdown
# headings, YAML and commit messages, where a newline would start a new construct. C1 controls,
# U+2028/U+2029, surrogates and U+FFFE/U+FFFF are refused too: YAML reads NEL (U+0085) and the
# separators as line breaks and refuses the rest outright, so campaign.yaml would not load. No
# Jinja delimiters either: cookiecutter renders every answer as a template (unsandboxed) before
# any hook can refuse it, so `{{ … }}` in an answer would be evaluated, not printed.
# No format characters either (Unicode category Cf, as of Unicode 15): bidi controls (U+202A-E,
# U+2066-9, U+200E/F, U+061C) make a name display as other text than it is (U+202E reverses what
# follows it), and zero-width ones (U+200B-D, U+2060, U+FEFF) make two names that look alike
# differ. Written out, not taken from unicodedata, so copier.yml's copy of the rule cannot change
# with the Python that generates it; a test holds it to the running Python's Cf.
FORMAT_CHARS = (
    r"\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
TEXT = (
    r"(?!.*(\{\{|\{%|\{#))[^\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff"
    + FORMAT_CHARS
    + r"]*"
)
BACKEND_LIST = r"(" + "|".join(BACKENDS) + r")(,(" + "|".join(BACKENDS) + r"))*"
INTEGER = r"[0-9]{1,9}"
NUMBER = r"[0-9]{1,9}(\.[0-9]{1,4})?"
# Where CI and the pre-commit hook install campaignops from: a PEP 508 requirement pinned to one
# release (``campaignops==0.1.0``) or to a git tag or commit (``campaignops @ git+URL@REF``), or
# an archive URL. It lands in shell double quotes and YAML double quotes, so the characters are
# a strict subset of PEP 508's that neither can interpret: no quotes, ``$``, backquotes,
# backslashes, spaces inside the URL, shell operators or Jinja braces.
_VERSION = (
    r"[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?"
)
_URL_PATH = r"[A-Za-z0-9._~:/%+=,-]+"
REQUIREMENT = (
    r"campaignops(=="
    + _VERSION
    + r"| @ (git\+(https|http|ssh|file)://([A-Za-z0-9._~-]+@)?"
    + _URL_PATH
    + r"@[A-Za-z0-9._/+-]+|(https|file)://"
    + _URL_PATH
    + r"\.(whl|tar\.gz|zip)))"
)


@dataclass(frozen=True)
class Rule:
    """What one free-form answer must be; each engine's check is derived from this one value.

    ``pattern`` must match the whole answer; ``length`` bounds its characters; ``whole_range``
    bounds it as a whole number; ``distinct`` refuses a repeated comma-separated item;
    ``item_of`` names the answer (a comma-separated list) this one must be an item of.
    """

    pattern: str | None = None
    length: tuple[int, int] | None = None
    whole_range: tuple[int, int] | None = None
    distinct: bool = False
    item_of: str | None = None


RULES: Mapping[str, Rule] = {
    "campaign_name": Rule(pattern=TEXT, length=(1, 100)),
    "campaign_slug": Rule(pattern=SLUG),
    "description": Rule(pattern=TEXT, length=(0, 500)),
    "owner_name": Rule(pattern=TEXT, length=(1, 100)),
    "owner_email": Rule(pattern=EMAIL, length=(0, 254)),
    "notify_email": Rule(pattern=EMAIL, length=(0, 254)),
    "backends": Rule(pattern=BACKEND_LIST, distinct=True),
    "smoke_backend": Rule(item_of="backends"),
    "stale_after_months": Rule(pattern=INTEGER, whole_range=(1, 120)),
    "cloud_budget_usd": Rule(pattern=NUMBER),
    "hpc_allocation_cap_percent": Rule(pattern=INTEGER, whole_range=(0, 100)),
    "campaignops_requirement": Rule(pattern=REQUIREMENT, length=(1, 500)),
}


@dataclass(frozen=True)
class Question:
    name: str
    help: str
    default: str
    choices: tuple[str, ...] = ()


QUESTIONS: tuple[Question, ...] = (
    Question("campaign_name", "Campaign name (free text, one line)", "My campaign"),
    Question("campaign_slug", "Short name: lowercase letters, digits, dashes", "my-campaign"),
    Question("description", "One line: what this campaign computes", "A compute campaign."),
    Question("owner_name", "Owner's name", "Campaign Owner"),
    Question("owner_email", "Owner's e-mail", "owner@example.org"),
    Question("notify_email", "E-mail for scheduler notifications", "owner@example.org"),
    Question("backends", "Authorized backends, comma-separated, in failover order", "local"),
    Question("smoke_backend", "Backend for smoke runs (one of the chosen)", "local"),
    Question("domain", "Domain of the campaign", "other", DOMAINS),
    Question("ci", "CI service for the checks", "github", CI_CHOICES),
    Question("stale_after_months", "Months before a verified stamp is stale", "6"),
    Question("cloud_budget_usd", "Cloud GPU budget cap in USD (0 = none allowed)", "0"),
    Question("hpc_allocation_cap_percent", "Share of the HPC allocation allowed, %", "80"),
    # "no": every way of generating makes a campaign without a remote, where "yes" would refuse
    # the first submit (docs/decisions.md, 127); set it once the campaign has its shared remote.
    Question("require_pushed", "Submit only commits pushed upstream", "no", YES_NO),
    # The default pins the release that ships this template (a test keeps it equal to
    # campaignops.__version__); `campaign new` computes it (campaignops.generate.new.requirement).
    Question(
        "campaignops_requirement",
        "pip requirement CI installs campaignops from",
        "campaignops==0.1.0",
    ),
)
NAMES = tuple(q.name for q in QUESTIONS)

_NO_FORMAT = (
    ", and without invisible format characters (bidi controls such as U+202E, zero-width spaces)"
)
MESSAGES: Mapping[str, str] = {
    "campaign_name": "campaign_name must be 1-100 printable characters on one line, without {{, {% or {#"
    + _NO_FORMAT,
    "campaign_slug": "campaign_slug must be lowercase letters, digits and dashes, start with a "
    "letter or digit, at most 63 characters",
    "description": "description must be at most 500 printable characters on one line, without "
    "{{, {% or {#" + _NO_FORMAT,
    "owner_name": "owner_name must be 1-100 printable characters on one line, without {{, {% or {#"
    + _NO_FORMAT,
    "owner_email": "owner_email must be an e-mail address like name@example.org",
    "notify_email": "notify_email must be an e-mail address like name@example.org",
    "backends": "backends must be a comma-separated list (no spaces, no repeats) of: "
    + ", ".join(BACKENDS),
    "smoke_backend": "smoke_backend must be one of the chosen backends",
    "domain": "domain must be one of: " + ", ".join(DOMAINS),
    "ci": "ci must be one of: " + ", ".join(CI_CHOICES),
    "stale_after_months": "stale_after_months must be a whole number from 1 to 120",
    "cloud_budget_usd": "cloud_budget_usd must be a number of dollars, 0 or more",
    "hpc_allocation_cap_percent": "hpc_allocation_cap_percent must be a whole number 0-100",
    "require_pushed": "require_pushed must be yes or no",
    "campaignops_requirement": "campaignops_requirement must pin campaignops: campaignops==X.Y.Z, "
    "or campaignops @ git+https://HOST/PATH@TAG-OR-COMMIT (also git+ssh://, git+file://), "
    "or campaignops @ https://HOST/PATH.whl; no spaces, quotes or $ in the URL",
}


def follows(rule: Rule, value: str, answers: Mapping[str, str]) -> bool:
    """Whether ``value`` follows ``rule``; ``answers`` holds the others (for ``item_of``)."""
    if rule.pattern is not None and re.fullmatch(rule.pattern, value) is None:
        return False
    if rule.length is not None and not rule.length[0] <= len(value) <= rule.length[1]:
        return False
    low, high = rule.whole_range or (0, 0)
    # whole_range comes with a digits-only pattern, so int() cannot fail here.
    if rule.whole_range is not None and not low <= int(value) <= high:
        return False
    items = value.split(",")
    if rule.distinct and len(set(items)) != len(items):
        return False
    return rule.item_of is None or value in str(answers.get(rule.item_of, "")).split(",")


def _ok(name: str, value: str, answers: Mapping[str, str]) -> bool:
    if name in RULES:
        return follows(RULES[name], value, answers)
    choices = {q.name: q.choices for q in QUESTIONS}[name]
    return value in choices


def validate_one(name: str, value: str, answers: Mapping[str, str] | None = None) -> str | None:
    """The message refusing ``value`` for question ``name``; None when it is acceptable."""
    return None if _ok(name, value, answers or {}) else MESSAGES[name]


def unknown(names: Iterable[object]) -> list[str]:
    """Given answer names that are not questions. ``_``-names are the engines' own metadata
    (cookiecutter's ``_template``, Copier's ``_src_path``); ``cookiecutter`` is computed from
    the answers in copier.yml, so giving it would override every validated answer."""
    return [str(n) for n in names if str(n) not in NAMES and not str(n).startswith("_")]


UNKNOWN_MESSAGE = (
    "{names}: not a question of this template; the questions are: "
    + ", ".join(NAMES)
    + " (cookiecutter is computed from them and cannot be given)"
)


def validate(answers: Mapping[str, object]) -> dict[str, str]:
    """Problems by answer name; empty when every answer is acceptable.

    Values are compared as strings (cookiecutter passes strings; Copier may pass numbers).
    A name that is no question is a problem too (see ``unknown``).
    """
    text = {k: ("" if v is None else str(v)) for k, v in answers.items()}
    problems: dict[str, str] = {
        name: UNKNOWN_MESSAGE.format(names=name) for name in unknown(answers)
    }
    for name in NAMES:
        if name not in text:
            problems[name] = f"{name} is missing"
        elif not _ok(name, text[name], text):
            problems[name] = MESSAGES[name]
    return problems
