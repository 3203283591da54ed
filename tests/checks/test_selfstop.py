"""POLICY007 and POLICY008: budgets.idle_stop_minutes and the authorized ssh pages' self_stop."""

from __future__ import annotations

from pathlib import Path

import pytest

PAGE = """\
---
platform: rented
kind: ssh
scheduler: none
meter_stop_irreversible: true
{extra}verified: 2026-11
---

# Rented boxes
"""


def pol(run, *paths: str):  # type: ignore[no-untyped-def]
    return run("check", "--select", "POLICY", "--format", "json", *paths)


@pytest.fixture
def boxes(campaign: Path) -> Path:
    """The clean fixture with an authorized ssh page (no self_stop yet) and the idle stop on."""
    (campaign / "backends/rented.md").write_text(PAGE.format(extra=""))
    policy = campaign / "campaign.yaml"
    text = policy.read_text().replace(
        "backends: [local, generic-slurm]", "backends: [local, rented]"
    )
    policy.write_text(
        text.replace("  cloud_usd: 200\n", "  cloud_usd: 200\n  idle_stop_minutes: 45\n")
    )
    return campaign


def test_idle_stop_with_an_ssh_page_that_gives_no_self_stop(boxes: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = pol(run)
    assert result.where() == [("campaign.yaml", 12, "POLICY007")]
    finding = result.json()["findings"][0]
    assert finding["col"] == 3  # the key's own column
    assert str(finding["message"]).startswith(
        "budgets.idle_stop_minutes is 45 but backends/rented.md gives no self_stop"
    )
    assert "add self_stop:" in str(finding["hint"])
    # Checking only the page (pre-commit passes what changed) still says it.
    assert pol(run, "backends/rented.md").where() == [("campaign.yaml", 12, "POLICY007")]
    # Off (the default): nothing is asked of the pages.
    policy = boxes / "campaign.yaml"
    policy.write_text(policy.read_text().replace("  idle_stop_minutes: 45\n", ""))
    assert (pol(run).code, pol(run).ids()) == (0, [])


def test_a_self_stop_that_keeps_the_disk_is_clean(boxes: Path, run) -> None:  # type: ignore[no-untyped-def]
    extra = 'self_stop: runpodctl stop pod "$RUNPOD_POD_ID"\nself_stop_irreversible: false\n'
    (boxes / "backends/rented.md").write_text(PAGE.format(extra=extra))
    assert (pol(run).code, pol(run).ids()) == (0, [])


def test_a_self_stop_that_deletes_the_disk_is_warned_at_its_line(boxes: Path, run) -> None:  # type: ignore[no-untyped-def]
    # Not said: the page's meter_stop_irreversible (true here) stands for it.
    (boxes / "backends/rented.md").write_text(PAGE.format(extra="self_stop: destroy-me\n"))
    result = pol(run)
    assert result.where() == [("backends/rented.md", 6, "POLICY008")]
    assert "'destroy-me' deletes the instance or its disk" in str(
        result.json()["findings"][0]["message"]
    )
    page = PAGE.format(extra="self_stop: destroy-me\nself_stop_irreversible: true\n")
    (boxes / "backends/rented.md").write_text(
        page.replace("meter_stop_irreversible: true", "meter_stop_irreversible: false")
    )
    assert pol(run).where() == [("backends/rented.md", 6, "POLICY008")]


@pytest.mark.parametrize("value", ["0", "-1", ".inf", "10081", "'30'"])
def test_idle_stop_minutes_is_a_positive_number_up_to_a_week(  # type: ignore[no-untyped-def]
    boxes: Path, run, value: str
) -> None:
    (boxes / "backends/rented.md").write_text(
        PAGE.format(extra="self_stop: stop-me\nself_stop_irreversible: false\n")
    )
    policy = boxes / "campaign.yaml"
    policy.write_text(
        policy.read_text().replace("idle_stop_minutes: 45", f"idle_stop_minutes: {value}")
    )
    result = pol(run)
    assert result.where() == [("campaign.yaml", 12, "POLICY001")]
    message = str(result.json()["findings"][0]["message"])  # the bound, not an unknown key
    assert message.startswith("campaign.yaml: budgets.idle_stop_minutes: "), message
