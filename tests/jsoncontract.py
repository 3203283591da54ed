"""The JSON contract, as the tests hold every command to it (docs/json.md): with ``--format json``
in its argv, a command's stdout is exactly one JSON document whose ``schema`` names the command
the argv names, and which validates against that command's shipped output schema.

tests/conftest.py's ``run`` passes every in-process run through ``check``, so each scenario that
asks for JSON also checks the contract.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from campaignops import cli
from campaignops.cli import contract, schemas


@cache
def validator(command: str) -> Draft202012Validator:
    schema = schemas.output_schema(command)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@cache
def _parser() -> Any:
    return cli.build_parser()


def check(argv: Sequence[str], out: str, code: int) -> dict[str, Any] | None:
    """The document ``out`` holds, checked; None when ``argv`` does not ask for JSON."""
    if not contract.json_requested(argv):
        return None
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as exc:
        shown = " ".join(argv)
        raise AssertionError(f"campaign {shown}: stdout is not one JSON document: {exc}") from None
    assert isinstance(doc, dict), out
    command = contract.command_of(_parser(), argv)
    assert doc.get("schema") == contract.schema_id(command), (argv, doc.get("schema"))
    error = best_match(validator(command).iter_errors(doc))
    assert error is None, f"campaign {' '.join(argv)}: {error.message} at {list(error.path)}"
    assert code in (0, 1, 2), code
    if "error" in doc:  # an error is never a success
        assert code in (1, 2), (code, doc)
    return doc
