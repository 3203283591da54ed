"""POLICY: campaign.yaml, backend pages' front matter and the failure catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from campaignops.core.yamldoc import Locator


def pol(run, *paths: str):  # type: ignore[no-untyped-def]
    return run("check", "--select", "POLICY", "--format", "json", *paths)


def test_clean_fixture_is_silent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    assert (pol(run).code, pol(run).ids()) == (0, [])


def test_invalid_policy_value_at_its_line(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (campaign / "campaign.yaml").read_text()
    (campaign / "campaign.yaml").write_text(
        text.replace("name: demo-campaign", "name: Demo Campaign")
    )
    result = pol(run)
    assert result.where() == [("campaign.yaml", 2, "POLICY001")]


def test_bad_email_and_unknown_key(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (campaign / "campaign.yaml").read_text()
    text = text.replace("notify_email: ada@example.org", "notify_email: not-an-email\nbudget: 3")
    (campaign / "campaign.yaml").write_text(text)
    result = pol(run)
    assert result.where() == [("campaign.yaml", 7, "POLICY001"), ("campaign.yaml", 8, "POLICY001")]
    assert "did you mean 'budgets'?" in str(result.json()["findings"][1]["message"])


def test_authorized_backend_without_page(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "backends" / "generic-slurm.md").unlink()
    result = pol(run)
    assert result.where() == [("campaign.yaml", 8, "POLICY002")]
    assert "backends/generic-slurm.md" in str(result.json()["findings"][0]["message"])


def test_smoke_backend_must_be_authorized(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        (campaign / "campaign.yaml")
        .read_text()
        .replace("smoke_backend: local", "smoke_backend: crux")
    )
    (campaign / "campaign.yaml").write_text(text)
    assert pol(run).where() == [("campaign.yaml", 9, "POLICY001")]


def test_agents_may_names_only_commands_campaign_mcp_can_allow(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    policy = campaign / "campaign.yaml"
    lines = len(policy.read_text().splitlines())
    policy.write_text(policy.read_text() + "agents:\n  may: [submit, scancel, 'lesson add']\n")
    result = pol(run)
    assert result.where() == [("campaign.yaml", lines + 2, "POLICY001")]
    message = str(result.json()["findings"][0]["message"])
    assert "'scancel' is no command campaign mcp can allow" in message
    assert "submit, cancel, release, lesson add, pull" in message


def test_policy_yaml_syntax_error(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "campaign.yaml").write_text("name: x\nbackends: [local\n")
    result = pol(run)
    assert [i for _, _, i in result.where()] == ["POLICY005"]


def test_backend_front_matter_errors_use_file_lines(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    page = campaign / "backends" / "local.md"
    text = (
        page.read_text()
        .replace("kind: local", "kind: laptop")
        .replace("    purpose: smoke", "    purpose: testing")
    )
    page.write_text(text)
    result = pol(run)
    assert result.where() == [
        ("backends/local.md", 3, "POLICY003"),
        ("backends/local.md", 11, "POLICY003"),
    ]


def test_backend_page_without_front_matter(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "backends" / "local.md").write_text("# Local\n\nno front matter\n")
    assert pol(run).where() == [("backends/local.md", 1, "POLICY003")]


def test_backend_platform_must_match_page_name(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    page = campaign / "backends" / "local.md"
    page.write_text(page.read_text().replace("platform: local", "platform: laptop"))
    result = pol(run)
    assert result.where() == [("backends/local.md", 2, "POLICY003")]


def test_template_page_is_not_a_backend(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "backends" / "TEMPLATE.md").write_text("---\nplatform: <name>\n---\n")
    assert pol(run).ids() == []


def test_failure_catalog_errors(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    entry = """\
  - id: crlf-script
    category: gremlins
    matchers: ["("]
    symptom: s
    cause: c
    fix: f
    source: s
    verified: 2026-10
"""
    path = campaign / "failures.yaml"
    path.write_text(path.read_text() + entry)
    result = pol(run)
    # The unknown category fails the schema, so the semantic checks wait for it to be fixed.
    assert result.where() == [("failures.yaml", 13, "POLICY004")]
    path.write_text(path.read_text().replace("category: gremlins", "category: other"))
    result = pol(run)
    assert result.where() == [
        ("failures.yaml", 12, "POLICY004"),
        ("failures.yaml", 14, "POLICY004"),
    ]
    messages = [str(f["message"]) for f in result.json()["findings"]]
    assert "duplicate id 'crlf-script' (first at line 3)" in messages[0]
    assert "not a valid regular expression" in messages[1]


def test_a_matcher_that_could_backtrack_for_ever_is_refused(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    entry = """\
  - id: hangs
    category: other
    matchers: ['^(a+)+$', 'a{4294967296}']
    symptom: s
    cause: c
    fix: f
    source: s
    verified: 2026-10
"""
    path = campaign / "failures.yaml"
    path.write_text(path.read_text() + entry)
    result = pol(run)
    messages = [str(f["message"]) for f in result.json()["findings"]]
    assert result.where() == [
        ("failures.yaml", 14, "POLICY004"),
        ("failures.yaml", 14, "POLICY004"),
    ]
    assert "repeat inside a repeat" in messages[0]
    assert "not a valid regular expression" in messages[1]


def test_failure_sample_must_match_a_matcher(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    path = campaign / "failures.yaml"
    text = path.read_text().replace(
        "    symptom:",
        '    samples:\n      - "line 3: $\'\\\\r\': command not found"\n      - "nothing like it"\n    symptom:',
        1,
    )
    path.write_text(text)
    result = pol(run)
    assert result.where() == [("failures.yaml", 9, "POLICY004")]


def test_an_unsafe_table_header_is_refused_where_it_is(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    # table_header patterns run on every line like matchers, so they pass the same safety check.
    path = campaign / "failures.yaml"
    text = path.read_text().replace(
        "    symptom:", "    table_header:\n      - '^(a+)+$'\n    symptom:", 1
    )
    path.write_text(text)
    result = pol(run)
    assert result.where() == [("failures.yaml", 8, "POLICY004")]
    assert "table header '^(a+)+$' cannot be used" in str(result.json()["findings"][0]["message"])


def priced(page: str, charging: str) -> str:
    """The page with a charging block at the top of its front matter."""
    assert page.startswith("---\n")
    return "---\n" + charging + page[4:]


def test_budget_allocations_and_a_charging_block_are_accepted(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    policy = campaign / "campaign.yaml"
    policy.write_text(
        policy.read_text().replace(
            "  hpc_allocation_cap_percent: 80\n",
            "  hpc_allocation_cap_percent: 80\n  allocations: {generic-slurm: 5000}\n",
        )
    )
    page = campaign / "backends" / "generic-slurm.md"
    charging = (
        "charging:\n  unit: gpu-hours\n  whole_nodes: true\n  gpus_per_node: 4\n"
        "  source: https://example.org/allocations\n  verified: 2026-11\n"
    )
    page.write_text(priced(page.read_text(), charging))
    assert (pol(run).code, pol(run).ids()) == (0, [])


def test_budget_values_out_of_range_are_refused_at_their_line(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    policy = campaign / "campaign.yaml"
    policy.write_text(
        policy.read_text().replace(
            "  hpc_allocation_cap_percent: 80\n",
            "  hpc_allocation_cap_percent: 80\n  allocations: {generic-slurm: 0}\n",
        )
    )
    page = campaign / "backends" / "local.md"
    bad = "charging:\n  unit: core-hours\n  source: s\n  verified: 2026-11\n"
    usd = "charging:\n  unit: usd\n  source: s\n  verified: 2026-11\n"  # no price
    text = page.read_text()
    page.write_text(priced(text, bad))
    first = pol(run)
    assert [(p, i) for p, _, i in first.where()] == [
        ("backends/local.md", "POLICY003"),
        ("campaign.yaml", "POLICY001"),
    ]
    assert first.where()[1][1] == 13
    page.write_text(priced(text, usd))
    usd_found = pol(run)
    assert [(p, i) for p, _, i in usd_found.where()] == [
        ("backends/local.md", "POLICY003"),
        ("backends/local.md", "POLICY003"),
        ("campaign.yaml", "POLICY001"),
    ]
    messages = " ".join(str(f["message"]) for f in usd_found.json()["findings"])
    assert "'per'" in messages and "'per_hour'" in messages


def test_a_clean_catalog_is_checked_without_composing_it(
    campaign: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Locating a node composes the whole document (the upstream catalog is ~200 KB): only a
    finding needs a place, so a clean catalog is never composed (it was, for every entry's id)."""
    composed: list[str] = []
    real = Locator._compose

    def spy(self: Locator) -> object:
        composed.append(self._text)
        return real(self)

    monkeypatch.setattr(Locator, "_compose", spy)
    catalog = (campaign / "failures.yaml").read_text(encoding="utf-8")
    assert (pol(run).code, pol(run).ids()) == (0, [])
    assert catalog not in composed
