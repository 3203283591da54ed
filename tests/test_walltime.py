"""The one walltime model: every accepted form, every refusal, and each backend's rendering.

The schema's ``time`` pattern and walltime.parse must agree on the shape of a value: the same
table drives both, so a form one accepts and the other refuses fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from campaignops.backends.local import machine as local_machine
from campaignops.backends.pbs import backend as pbs_backend
from campaignops.backends.slurm import backend as slurm_backend
from campaignops.core import schema
from campaignops.core.errors import UsageError
from campaignops.model import walltime

SCHEMAS = Path(__file__).resolve().parents[1] / "src" / "campaignops" / "schemas"

ACCEPTED = [
    # HH:MM is hours:minutes (the manifest's meaning), never Slurm's minutes:seconds.
    ("00:20", 20 * 60),
    ("01:30", 90 * 60),
    ("0:05", 5 * 60),
    ("72:00", 72 * 3600),
    ("00:00:01", 1),
    ("01:02:03", 3723),
    ("168:00:00", 7 * 86400),
    ("23:59:59", 86399),
    ("1-02:03", 86400 + 2 * 3600 + 3 * 60),
    ("1-2:03", 86400 + 2 * 3600 + 3 * 60),
    ("0-00:01", 60),
    ("1-02:03:04", 86400 + 2 * 3600 + 3 * 60 + 4),
    ("2-23:59:59", 3 * 86400 - 1),
    ("90", 90 * 60),  # a bare number is minutes, as sbatch reads it
    ("1", 60),
    ("0090", 90 * 60),
    ("0" * 5000 + "90", 90 * 60),  # past int()'s 4300 digits, still 90 minutes
    ("525600", 365 * 86400),  # a year of minutes: the largest limit
    ("365-00:00:00", 365 * 86400),
    ("8760:00:00", 365 * 86400),
]

# (value, words the message holds); the shape is wrong, or a field out of range.
REFUSED_SHAPE = [
    ("", "is not a time limit"),
    ("1 hour", "is not a time limit"),
    ("90m", "is not a time limit"),
    ("1:5", "is not a time limit"),  # minutes are two digits
    ("1:05:6", "is not a time limit"),
    ("1-02", "is not a time limit"),  # Slurm's days-hours: not accepted, too easily misread
    ("1-", "is not a time limit"),
    ("-1", "is not a time limit"),
    ("+90", "is not a time limit"),
    ("1-001:00", "is not a time limit"),
    (" 00:20", "is not a time limit"),
    ("00:20 ", "is not a time limit"),
    ("00:20:00:00", "is not a time limit"),
    ("1.5", "is not a time limit"),
    ("\uff11:00", "is not a time limit"),  # a full-width digit is no digit here
]
# A field out of range: the schema's pattern refuses these too.
REFUSED_FIELDS = [
    ("00:60", "minutes 60 is over 59"),
    ("00:00:60", "seconds 60 is over 59"),
    ("1-24:00", "hours 24 is over 23"),
    ("1-99:99:99", "hours 99 is over 23; minutes 99 is over 59; seconds 99 is over 59"),
]
# Well shaped but zero or over a year: only walltime.parse (the runner) refuses these.
REFUSED_SIZE = [
    ("0", "is zero"),
    ("00:00", "is zero"),
    ("0-00:00:00", "is zero"),
    ("365-00:00:01", "is over 365 days"),
    ("366-00:00", "is over 365 days"),
    ("525601", "is over 365 days"),
    ("99999999999999999999-00:00", "is over 365 days"),  # would overflow Slurm's int
    ("24856-00:00", "is over 365 days"),  # the first day count past Slurm's 2**31 seconds
    ("1" * 5000, "is over 365 days"),
    ("8760:00:01", "is over 365 days"),
]


@pytest.mark.parametrize(("text", "seconds"), ACCEPTED)
def test_every_accepted_form_in_seconds(text: str, seconds: int) -> None:
    assert walltime.parse(text) == seconds


@pytest.mark.parametrize(("text", "words"), REFUSED_SHAPE + REFUSED_FIELDS + REFUSED_SIZE)
def test_a_bad_value_is_refused_saying_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(walltime.WalltimeError) as info:
        walltime.parse(text, where="manifests/a.yaml resources.time")
    error = info.value
    assert isinstance(error, UsageError) and error.exit_code == 2
    assert error.message.startswith(f"manifests/a.yaml resources.time {text!r}")
    assert words in error.message
    assert error.hint  # every refusal says what to write instead


@pytest.mark.parametrize("value", [20, 43200, 1.5, None, True])
def test_a_number_is_refused_with_the_yaml_trap_named(value: object) -> None:
    """Unquoted ``12:00:00`` reaches the runner as the integer 43200: never read as minutes."""
    with pytest.raises(walltime.WalltimeError, match="is not a string") as info:
        walltime.parse(value)
    assert "quote it" in info.value.hint


@pytest.mark.parametrize(
    ("seconds", "slurm", "pbs"),
    [
        (1, "00:00:01", "00:00:01"),
        (20 * 60, "00:20:00", "00:20:00"),
        (86399, "23:59:59", "23:59:59"),
        (86400, "1-00:00:00", "24:00:00"),
        (93784, "1-02:03:04", "26:03:04"),
        (365 * 86400, "365-00:00:00", "8760:00:00"),
    ],
)
def test_each_backend_gets_three_fields(seconds: int, slurm: str, pbs: str) -> None:
    assert slurm_backend.WALLTIME(seconds) == local_machine.WALLTIME(seconds) == slurm
    assert pbs_backend.WALLTIME(seconds) == pbs
    # What a backend is given reads back as the same limit.
    assert walltime.parse(slurm) == walltime.parse(pbs) == seconds


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_renderers_refuse_what_is_not_seconds(bad: object) -> None:
    with pytest.raises(walltime.WalltimeError):
        walltime.dhms(bad)  # type: ignore[arg-type]


def _time_patterns() -> list[str]:
    manifest = json.loads((SCHEMAS / "manifest.schema.json").read_text(encoding="utf-8"))
    backend = (SCHEMAS / "backend.schema.json").read_text(encoding="utf-8")
    found = [manifest["$defs"]["resources"]["properties"]["time"]["pattern"]]
    found += re.findall(r'"max_walltime": \{\s*"type": "string",\s*"pattern": "([^"]+)"', backend)
    return found


def test_every_schema_walltime_pattern_is_the_one_shape() -> None:
    patterns = _time_patterns()
    assert len(patterns) == 4 and len(set(patterns)) == 1  # manifest time, 3 max_walltime


def _schema_errors(time: object) -> list[str]:
    doc = {"jobs": [{"id": "a", "cmd": "true"}], "resources": {"time": time}}
    return [e.message for e in schema.validate("manifest", doc)]


@pytest.mark.parametrize(("text", "_"), ACCEPTED + REFUSED_SIZE)
def test_schema_accepts_every_well_shaped_value(text: str, _: object) -> None:
    assert _schema_errors(text) == []


@pytest.mark.parametrize(("text", "_"), REFUSED_SHAPE + REFUSED_FIELDS)
def test_schema_refuses_every_ill_shaped_value(text: str, _: str) -> None:
    """campaign check says the accepted forms in words, not the pattern's regex."""
    assert _schema_errors(text) == [
        f"resources.time: {text!r} is not in the form: Walltime: HH:MM (hours:minutes), "
        'HH:MM:SS, D-HH:MM, D-HH:MM:SS, or a quoted number of minutes ("90"); at most 365 days. '
        "Quote it: YAML reads an unquoted 12:00:00 as a number."
    ]


@pytest.mark.parametrize("value", [20, 43200])
def test_schema_refuses_a_number(value: int) -> None:
    assert _schema_errors(value) == [f"resources.time: {value} is not of type 'string'"]
