"""copier.yml's `validator:` expressions, written from campaignops.generate.answers.RULES.

Copier runs no package code without ``--trust``, so the rules must be Jinja in copier.yml. They
are generated, never hand-written, so the two engines cannot drift: ``python
dev/copier_validators.py`` rewrites them and ``--check`` (run by the tests) says when they differ.
Patterns are wrapped in ``\\A(?:…)\\Z``: the ``regex_search`` filter uses re.search, and ``$``
would let a trailing newline through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from campaignops.generate.answers import MESSAGES, NAMES, RULES, UNKNOWN_MESSAGE, Rule


def jinja_string(text: str) -> str:
    """``text`` as a single-quoted Jinja string literal (Jinja unescapes like Python)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _conditions(name: str, rule: Rule) -> list[str]:
    value = f"({name} | string)"
    out: list[str] = []
    if rule.pattern is not None:
        whole = jinja_string(r"\A(?:" + rule.pattern + r")\Z")
        out.append(f"({value} | regex_search({whole})) is none")
    if rule.length is not None:
        out.append(f"{value} | length < {rule.length[0]} or {value} | length > {rule.length[1]}")
    if rule.whole_range is not None:
        low, high = rule.whole_range
        out.append(f"({name} | int) < {low} or ({name} | int) > {high}")
    if rule.distinct:
        items = f"{value}.split(',')"
        out.append(f"({items} | unique | list | length) != ({items} | length)")
    if rule.item_of is not None:
        out.append(f"{value} not in ({rule.item_of} | string).split(',')")
    return out


# Copier validates --data answers but keeps the ones no question asks for: the first question
# refuses them (``_copier_conf.data`` is what --data and --data-file gave).
_UNKNOWN = (
    "{% set ns = namespace(bad=[]) %}"
    "{% for k in _copier_conf.data %}"
    "{% if (k | string) not in " + "[" + ", ".join(jinja_string(n) for n in NAMES) + "]"
    " and not (k | string).startswith('_') %}{% set ns.bad = ns.bad + [k | string] %}{% endif %}"
    "{% endfor %}"
)


def validator(name: str) -> str:
    """The Jinja validator for question ``name``: renders its message when the answer breaks
    the rule, nothing otherwise."""
    message = "{{ " + jinja_string(MESSAGES[name]) + " }}"
    test = "{% if " + " or ".join(_conditions(name, RULES[name])) + " %}" + message
    if name != NAMES[0]:
        return test + "{% endif %}"
    head, tail = UNKNOWN_MESSAGE.split("{names}")
    refuse = "{{ " + jinja_string(head) + " ~ (ns.bad | join(', ')) ~ " + jinja_string(tail) + " }}"
    return (
        _UNKNOWN
        + "{% if ns.bad %}"
        + refuse
        + test.replace("{% if ", "{% elif ", 1)
        + "{% endif %}"
    )


# The computed `cookiecutter` mapping, in case --data gives it and the first question's check is
# ever skipped: Copier validates a `when: false` question only when --data gives it, and then it
# must be exactly what the answers make (so it overrides nothing).
COOKIECUTTER_VALIDATOR = (
    "{% if cookiecutter != dict("
    + ", ".join(f"{n}={n}" for n in NAMES)
    + ") %}{{ "
    + jinja_string(UNKNOWN_MESSAGE.format(names="cookiecutter"))
    + " }}{% endif %}"
)

_QUESTION = re.compile(r"^(?P<name>[a-z_]+):\s*$")
_VALIDATOR = re.compile(r"^  validator: .*$")


def validators() -> Mapping[str, str]:
    """Every generated validator by question name (``cookiecutter`` included)."""
    return {**{n: validator(n) for n in RULES}, "cookiecutter": COOKIECUTTER_VALIDATOR}


def rewrite(text: str) -> str:
    """copier.yml ``text`` with each question's ``validator:`` line replaced by the generated
    one (added after ``type:`` where a question has none). JSON strings are YAML strings."""
    wanted = validators()
    lines = text.splitlines()
    current: str | None = None
    owner: dict[int, str] = {}
    for i, line in enumerate(lines):
        match = _QUESTION.match(line)
        if match:
            current = match["name"]
        elif current is not None:
            owner[i] = current
    has = {owner[i] for i, line in enumerate(lines) if i in owner and _VALIDATOR.match(line)}
    out: list[str] = []
    for i, line in enumerate(lines):
        name = owner.get(i, "")
        if name not in wanted:
            out.append(line)
            continue
        spelled = f"  validator: {json.dumps(wanted[name], ensure_ascii=False)}"
        if _VALIDATOR.match(line):
            out.append(spelled)
            continue
        out.append(line)
        if name not in has and line.startswith("  type:"):
            out.append(spelled)
    return "\n".join(out) + "\n"
