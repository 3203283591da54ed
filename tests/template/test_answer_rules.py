"""One rule set for every way in: copier.yml, cookiecutter's hook and `campaign new`.

Each answer must match its rule as a whole (a trailing newline used to pass Python's ``$``), and
no answer outside the questionnaire is taken: Copier's computed ``cookiecutter`` mapping, given
with --data, would override every validated answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campaignops.generate import answers as answers_mod
from campaignops.generate import copier_rules
from tests.template.conftest import ROOT, full_answers, render_cookiecutter, render_copier

# Every free-form answer, valid, with a newline after it.
TRAILING_NEWLINE = {
    "campaign_name": "camp\n",
    "campaign_slug": "camp\n",
    "description": "A compute campaign.\n",
    "owner_name": "Campaign Owner\n",
    "owner_email": "owner@example.org\n",
    "notify_email": "owner@example.org\n",
    "backends": "local\n",
    "smoke_backend": "local\n",
    "stale_after_months": "6\n",
    "cloud_budget_usd": "0\n",
    "hpc_allocation_cap_percent": "80\n",
    "campaignops_requirement": "campaignops==0.1.0\n",
}
OVERRIDE = {"campaign_slug": "camp", "backends": "local\nevil: [1", "owner_email": "x"}


def test_every_free_form_answer_is_covered() -> None:
    assert set(TRAILING_NEWLINE) == set(answers_mod.RULES)


def test_copier_yml_holds_the_generated_validators() -> None:
    text = (ROOT / "copier.yml").read_text(encoding="utf-8")
    assert copier_rules.rewrite(text) == text, "run python dev/copier_validators.py"


def _copier_refusal(dest: Path, data: dict[str, str]) -> str:
    with pytest.raises(ValueError, match="Validation error") as info:
        render_copier(dest, data)
    assert not dest.exists() or not any(dest.iterdir())
    return str(info.value)


@pytest.mark.parametrize("name", sorted(TRAILING_NEWLINE))
def test_trailing_newline_is_refused_by_both_engines_and_the_package(
    tmp_path: Path, name: str
) -> None:
    from cookiecutter.exceptions import FailedHookException

    data = full_answers("camp", {name: TRAILING_NEWLINE[name]})
    if name == "campaign_slug":
        data["campaign_name"] = "camp"
    assert name in answers_mod.validate(data)
    refusal = _copier_refusal(tmp_path / "copier", data)
    assert f"question '{name}'" in refusal and answers_mod.MESSAGES[name] in refusal
    with pytest.raises(FailedHookException):
        render_cookiecutter(tmp_path / "cookiecutter", data)
    assert list((tmp_path / "cookiecutter").iterdir()) == []


@pytest.mark.parametrize("name", sorted(TRAILING_NEWLINE))
def test_campaign_new_refuses_a_trailing_newline_naming_the_answer(
    tmp_path: Path, run, monkeypatch, name: str
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    value = TRAILING_NEWLINE[name]
    if name == "campaign_slug":
        value = "camp\n"
    result = run("new", "camp", "--defaults", "--data", f"{name}={value}")
    assert result.code == 2
    assert f"{name}={value!r}: {answers_mod.MESSAGES[name]}" in result.err
    assert not (tmp_path / "camp").exists()


# Characters YAML reads as line breaks (NEL, U+2028, U+2029) or refuses outright (other C1
# controls): campaign.yaml quoting them did not load, and the new campaign failed its checks.
YAML_BREAKERS = ["a\x85b", "a\x80b", "a\u2028b", "a\u2029b", "a\x9fb"]


@pytest.mark.parametrize("value", YAML_BREAKERS)
@pytest.mark.parametrize("name", ["campaign_name", "description", "owner_name"])
def test_yaml_line_breaks_and_c1_controls_are_refused_everywhere(
    tmp_path: Path, name: str, value: str
) -> None:
    from cookiecutter.exceptions import FailedHookException

    data = full_answers("camp", {name: value})
    assert name in answers_mod.validate(data)
    assert f"question '{name}'" in _copier_refusal(tmp_path / "copier", data)
    with pytest.raises(FailedHookException):
        render_cookiecutter(tmp_path / "cookiecutter", data)


def test_copier_refuses_the_cookiecutter_override(tmp_path: Path) -> None:
    data = {**full_answers("camp", {}), "cookiecutter": json.dumps(OVERRIDE)}
    refusal = _copier_refusal(tmp_path / "out", data)
    assert "cookiecutter: not a question of this template" in refusal
    assert not (tmp_path / "out" / "campaign.yaml").exists()


def test_copier_refuses_an_answer_outside_the_questionnaire(tmp_path: Path) -> None:
    data = {**full_answers("camp", {}), "colour": "red"}
    refusal = _copier_refusal(tmp_path / "out", data)
    assert "colour: not a question of this template" in refusal


def test_the_cookiecutter_validator_refuses_any_mapping_but_the_computed_one() -> None:
    # Copier checks the computed question only when --data gives it; the first question's check
    # refuses it first, so this one is rendered directly, as Copier's sandbox would.
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment()
    answers = full_answers("camp", {})
    template = env.from_string(copier_rules.COOKIECUTTER_VALIDATOR)
    assert template.render(**answers, cookiecutter=dict(answers)) == ""
    refused = template.render(**answers, cookiecutter={**answers, **OVERRIDE})
    assert refused.startswith("cookiecutter: not a question")


def test_campaign_new_refuses_the_cookiecutter_answer(tmp_path: Path, run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    result = run("new", "camp", "--defaults", "--data", f"cookiecutter={json.dumps(OVERRIDE)}")
    assert result.code == 2
    assert "unknown question(s): cookiecutter" in result.err
    assert not (tmp_path / "camp").exists()


def test_validate_names_answers_outside_the_questionnaire() -> None:
    data = {**full_answers("camp", {}), "cookiecutter": "{}", "_template": "x"}
    assert list(answers_mod.validate(data)) == ["cookiecutter"]


# Bidi controls (U+202A-E, U+2066-9, U+200E/F, U+061C) and other format characters (Cf): a
# campaign named "\u202eevil" displays reversed in every heading, log and review it reaches.
BIDI = [*"\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"]
OTHER_FORMAT = ["\u200b", "\u200d", "\u2060", "\ufeff", "\xad", "\U000e0041", "\U0001343f"]


def _with(name: str, char: str) -> dict[str, str]:
    """Valid answers, then ``char`` put inside ``name``'s."""
    data = full_answers("camp", {})
    value = data[name]
    data[name] = value[:1] + char + value[1:]
    return data


def _refused_by_both_engines(tmp_path: Path, name: str, data: dict[str, str]) -> None:
    from cookiecutter.exceptions import FailedHookException

    with pytest.raises(ValueError, match=r"Validation error|Invalid choice") as info:
        render_copier(tmp_path / "copier", data)
    assert name in str(info.value)
    assert not (tmp_path / "copier" / "campaign.yaml").exists()
    with pytest.raises((FailedHookException, ValueError)):
        render_cookiecutter(tmp_path / "cookiecutter", data)
    assert not (tmp_path / "cookiecutter" / "camp").exists()


@pytest.mark.parametrize("name", answers_mod.NAMES)
def test_a_right_to_left_override_is_refused_in_every_answer_by_every_way_in(
    tmp_path: Path, run, monkeypatch, name: str
) -> None:  # type: ignore[no-untyped-def]
    data = _with(name, "\u202e")
    assert name in answers_mod.validate(data)
    _refused_by_both_engines(tmp_path, name, data)
    monkeypatch.chdir(tmp_path)
    result = run("new", "camp", "--defaults", "--data", f"{name}={data[name]}")
    assert result.code == 2
    assert "\u202e" not in result.err and "\\u202e" in result.err  # shown escaped, never live
    assert not (tmp_path / "camp").exists()


@pytest.mark.parametrize("char", BIDI + OTHER_FORMAT, ids=lambda c: f"U+{ord(c):04X}")
def test_format_characters_are_refused_in_free_text_by_both_engines(
    tmp_path: Path, char: str
) -> None:
    # The three free-text answers share one rule (TEXT); the engines are run on one of them.
    for name in ("campaign_name", "description", "owner_name"):
        data = _with(name, char)
        assert answers_mod.validate(data) == {name: answers_mod.MESSAGES[name]}
    _refused_by_both_engines(tmp_path, "campaign_name", _with("campaign_name", char))


def test_every_format_character_this_python_knows_is_refused() -> None:
    import unicodedata

    format_chars = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert len(format_chars) > 150
    allowed = [
        f"U+{ord(c):04X}"
        for c in format_chars
        if answers_mod.validate_one("campaign_name", f"a{c}b") is None
    ]
    assert allowed == [], "add them to answers.FORMAT_CHARS"
    # Letters of every script still pass (the rule is about invisible characters only).
    assert answers_mod.validate_one("campaign_name", "Ünïcødé Łódź 東京 القاهرة") is None
