"""The merged failure catalog: failures.local.yaml over failures.yaml by id."""

from __future__ import annotations

from pathlib import Path

from campaignops.model import catalog
from campaignops.model import catalog_source as catalogs


def entry(entry_id: str, fix: str = "upstream fix") -> dict[str, object]:
    return {
        "id": entry_id,
        "category": "other",
        "matchers": [f"{entry_id.upper()} FAILED"],
        "fix": fix,
    }


def test_local_overrides_in_place_adds_and_disables() -> None:
    merged = catalogs.merge(
        [
            ("failures.yaml", {"version": 1, "failures": [entry("a"), entry("b"), entry("c")]}),
            (
                "failures.local.yaml",
                {
                    "version": 1,
                    "disable": ["c", "not-there"],
                    "failures": [entry("a", "ours"), entry("d")],
                },
            ),
        ]
    )
    assert merged.data == {
        "version": 1,
        "failures": [entry("a", "ours"), entry("b"), entry("d")],
    }
    assert dict(merged.origin) == {
        "a": "failures.local.yaml",
        "b": "failures.yaml",
        "d": "failures.local.yaml",
    }
    assert dict(merged.disabled) == {"c": "failures.local.yaml"}


def test_a_duplicate_within_one_file_stays_for_policy_to_report() -> None:
    merged = catalogs.merge([("failures.yaml", {"failures": [entry("a"), entry("a", "again")]})])
    assert merged.entries == [entry("a"), entry("a", "again")]


def test_order_puts_local_files_last() -> None:
    assert catalogs.ordered(["z.local.yaml", "failures.local.yml", "b.yaml", "a.yaml"]) == (
        "a.yaml",
        "b.yaml",
        "failures.local.yml",
        "z.local.yaml",
    )


def test_the_engine_reads_the_merged_catalog(tmp_path: Path) -> None:
    (tmp_path / "campaign.yaml").write_text("name: x\n", encoding="utf-8")
    (tmp_path / "failures.yaml").write_text(
        "version: 1\nfailures:\n"
        "  - {id: a, category: other, matchers: ['A FAILED'], fix: upstream}\n"
        "  - {id: b, category: other, matchers: ['B FAILED'], fix: upstream}\n",
        encoding="utf-8",
    )
    (tmp_path / "failures.local.yaml").write_text(
        "version: 1\ndisable: [b]\nfailures:\n"
        "  - {id: a, category: timeout, matchers: ['A FAILED'], fix: ours}\n"
        "  - {id: mine, category: other, matchers: ['MINE FAILED'], fix: mine}\n",
        encoding="utf-8",
    )
    loaded = catalog.load(tmp_path)
    assert [(e.id, e.category, e.fix) for e in loaded.entries] == [
        ("a", "timeout", "ours"),
        ("mine", "other", "mine"),
    ]


def test_a_disable_naming_no_earlier_entry_is_policy004(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "failures.local.yaml").write_text(
        "version: 1\ndisable:\n  - no-such-entry\nfailures: []\n", encoding="utf-8"
    )
    result = run("check", "--select", "POLICY004")
    assert result.code == 1
    assert (
        "failures.local.yaml:3:5: POLICY004 failure catalog: disable 'no-such-entry': no earlier "
        "catalog file has this id (failures.local.yaml can disable ids of failures.yaml)"
    ) in result.out
    known = (
        (campaign / "failures.yaml").read_text(encoding="utf-8").split("- id: ", 1)[1].split()[0]
    )
    (campaign / "failures.local.yaml").write_text(
        f"version: 1\ndisable: [{known}]\nfailures: []\n", encoding="utf-8"
    )
    assert run("check", "--select", "POLICY004").code == 0


def test_the_templates_local_catalog_starts_empty_and_valid() -> None:
    from campaignops.core import schema, yamldoc
    from campaignops.generate import new as scaffold

    path = scaffold.template_root() / "template/{{cookiecutter.campaign_slug}}/failures.local.yaml"
    data = yamldoc.load(path.read_text(encoding="utf-8"), path="failures.local.yaml")
    assert data == {"version": 1, "disable": [], "failures": []}
    assert list(schema.validate(schema.FAILURES, data)) == []
    copier_yml = (scaffold.template_root() / "copier.yml").read_text(encoding="utf-8")
    skipped = copier_yml.split("_skip_if_exists:\n", 1)[1].split("\n\n", 1)[0]
    # The campaign's own file is kept on update; the upstream catalog and pages are updated.
    assert '"failures.local.yaml"' in skipped
    assert '"failures.yaml"' not in skipped and "backends/" not in skipped
