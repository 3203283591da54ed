"""The policy's budget numbers from hostile values: found by the campaign fuzz suite
(tests/test_fuzz_campaign.py), where `budgets: {cloud_usd: 10**90}` made `campaign check` and
`campaign submit` die with OverflowError (int too large to convert to float)."""

from __future__ import annotations

from campaignops.model import policy


def test_an_integer_past_a_floats_range_is_no_usable_budget() -> None:
    found = policy.from_data({"name": "x", "budgets": {"cloud_usd": 10**400}}, found=True)
    assert found.cloud_usd is None
    assert policy.from_data({"budgets": {"cloud_usd": 200}}, found=True).cloud_usd == 200.0
