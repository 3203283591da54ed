"""The shipped JSON Schemas: loadable as package resources, valid 2020-12, inside the wheel."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from campaignops.cli import schemas
from campaignops.core import schema

REPO = Path(__file__).resolve().parents[1]
DRAFT = "https://json-schema.org/draft/2020-12/schema"
CATEGORIES = [
    "oom-host",
    "oom-gpu",
    "timeout",
    "preempted",
    "node-failure",
    "line-endings",
    "disk-full",
    "inodes",
    "nccl",
    "numerical-instability",
    "gpu-hardware",
    "scheduler-rejected",
    "quota-limit",
    "environment",
    "driver-mismatch",
    "filesystem",
    "segfault",
    "network",
    "checkpoint",
    "dependency",
    "other",
]


def test_names_are_the_five_schemas() -> None:
    assert schema.NAMES == ("manifest", "policy", "backend", "failures", "ledger-record")


@pytest.mark.parametrize("name", schema.NAMES)
def test_schema_loads_as_resource_and_is_valid(name: str) -> None:
    data = schema.load(name)
    assert data["$schema"] == DRAFT
    assert isinstance(data["$id"], str)
    assert data["$id"]
    Draft202012Validator.check_schema(data)


def test_ids_are_unique() -> None:
    ids = [schema.load(name)["$id"] for name in schema.NAMES]
    assert len(set(ids)) == len(ids)


def test_failure_categories_are_the_fixed_vocabulary_in_order() -> None:
    failures = schema.load(schema.FAILURES)
    category = failures["$defs"]["entry"]["properties"]["category"]
    if "$ref" in category:
        ref = category["$ref"].removeprefix("#/$defs/")
        category = failures["$defs"][ref]
    assert category["enum"] == CATEGORIES


def test_validate_reports_where_and_what() -> None:
    errors = list(schema.validate(schema.MANIFEST, {"jobs": [{"id": "ok", "colour": 1}]}))
    assert [(e.where, e.on_key) for e in errors] == [(("jobs", 0, "colour"), True)]
    assert "unknown key 'colour'" in errors[0].message
    assert list(schema.validate(schema.MANIFEST, {"jobs": [{"id": "ok"}]})) == []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    try:
        import hatchling  # noqa: F401

        cmd = [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)]
    except ImportError:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(out), str(REPO)]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, timeout=600)
    (built,) = out.glob("campaignops-*.whl")
    return built


def test_wheel_ships_the_schemas(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n for n in zf.namelist() if n.startswith("campaignops/schemas/")}
        assert shipped >= {f"campaignops/schemas/{name}.schema.json" for name in schema.NAMES}
        for name in schema.NAMES:
            data = json.loads(zf.read(f"campaignops/schemas/{name}.schema.json"))
            assert data == schema.load(name)
        # The output schemas of --format json (docs/json.md): every command's, as installed.
        for command in schemas.names():
            data = json.loads(zf.read(f"campaignops/schemas/output/{command}.v1.schema.json"))
            assert data == schemas.output_schema(command)


@pytest.mark.parametrize("name", schema.NAMES)
def test_top_level_schemas_dir_is_the_shipped_one(name: str) -> None:
    # Editors and check-jsonschema point at schemas/ in the repository; it must not drift.
    on_disk = json.loads((REPO / "schemas" / f"{name}.schema.json").read_text())
    assert on_disk == schema.load(name)
