"""The template's questions and the rules their answers must follow.

One implementation for both engines: cookiecutter's pre-generation hook and `campaign new` call
``validate``; Copier cannot run package code without ``--trust``, so copier.yml carries the same
rules as Jinja validators, and a test proves the two accept and refuse exactly the same answers.
Answers are refused rather than escaped wherever they could reach a shell, YAML or a file name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

BACKENDS = (
    "alpine", "polaris", "crux", "vast-ai", "runpod", "lambda",
    "generic-slurm", "generic-pbs", "generic-ssh", "kubernetes", "local",
)  # fmt: skip
DOMAINS = ("md", "ml-training", "quantum-chemistry", "other")
CI_CHOICES = ("github", "gitlab", "both", "none")
YES_NO = ("yes", "no")

SLUG = r"^[a-z0-9][a-z0-9-]{0,62}$"
EMAIL = r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$"
# Printable text without control characters (newlines included): answers land in Markdown
# headings, YAML and commit messages, where a newline would start a new construct. No Jinja
# delimiters either: cookiecutter renders every answer as a template (unsandboxed) before any
# hook can refuse it, so `{{ … }}` in an answer would be evaluated, not printed.
TEXT = r"^(?!.*(\{\{|\{%|\{#))[^\x00-\x1f\x7f]*$"
BACKEND_LIST = r"^(" + "|".join(BACKENDS) + r")(,(" + "|".join(BACKENDS) + r"))*$"
INTEGER = r"^[0-9]{1,9}$"
NUMBER = r"^[0-9]{1,9}(\.[0-9]{1,4})?$"


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
    Question("require_pushed", "Submit only commits pushed upstream", "yes", YES_NO),
)
NAMES = tuple(q.name for q in QUESTIONS)

MESSAGES: Mapping[str, str] = {
    "campaign_name": "campaign_name must be 1-100 printable characters on one line, without {{, {% or {#",
    "campaign_slug": "campaign_slug must be lowercase letters, digits and dashes, start with a "
    "letter or digit, at most 63 characters",
    "description": "description must be at most 500 printable characters on one line, without {{, {% or {#",
    "owner_name": "owner_name must be 1-100 printable characters on one line, without {{, {% or {#",
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
}


def _text(value: str, *, low: int, high: int) -> bool:
    return low <= len(value) <= high and re.search(TEXT, value) is not None


def _ok(name: str, value: str, answers: Mapping[str, str]) -> bool:
    if name in ("campaign_name", "owner_name"):
        return _text(value, low=1, high=100)
    if name == "description":
        return _text(value, low=0, high=500)
    if name == "campaign_slug":
        return re.search(SLUG, value) is not None
    if name in ("owner_email", "notify_email"):
        return len(value) <= 254 and re.search(EMAIL, value) is not None
    if name == "backends":
        items = value.split(",")
        return re.search(BACKEND_LIST, value) is not None and len(set(items)) == len(items)
    if name == "smoke_backend":
        return value in str(answers.get("backends", "")).split(",")
    if name == "stale_after_months":
        return re.search(INTEGER, value) is not None and 1 <= int(value) <= 120
    if name == "cloud_budget_usd":
        return re.search(NUMBER, value) is not None
    if name == "hpc_allocation_cap_percent":
        return re.search(INTEGER, value) is not None and int(value) <= 100
    choices = {q.name: q.choices for q in QUESTIONS}[name]
    return value in choices


def validate(answers: Mapping[str, object]) -> dict[str, str]:
    """Problems by question name; empty when every answer is acceptable.

    Values are compared as strings (cookiecutter passes strings; Copier may pass numbers).
    """
    text = {k: ("" if v is None else str(v)) for k, v in answers.items()}
    problems: dict[str, str] = {}
    for name in NAMES:
        if name not in text:
            problems[name] = f"{name} is missing"
        elif not _ok(name, text[name], text):
            problems[name] = MESSAGES[name]
    return problems
