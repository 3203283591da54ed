"""upkeep: when stamps expire, which are stale or due, ledger health, jobs past their limit."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from campaignops.checks.finding import Finding
from campaignops.gitops.upkeep.gather import key_sources
from campaignops.gitops.upkeep.run import (
    StampedFile,
    audit,
    expires,
    overdue,
    sort_stamps,
    time_limit,
)
from campaignops.model import ledger
from campaignops.model.stamps import find_stamps, markdown_stamps

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("stamp", "limit", "first_stale"),
    [
        (dt.date(2026, 11, 1), 6, dt.date(2027, 6, 1)),
        (dt.date(2026, 11, 30), 6, dt.date(2027, 6, 1)),  # the day does not matter: months do
        (dt.date(2026, 6, 1), 6, dt.date(2027, 1, 1)),  # over the year's end
        (dt.date(2026, 12, 1), 0, dt.date(2027, 1, 1)),
        (dt.date(9999, 6, 1), 6, dt.date.max),  # past the calendar's end
    ],
)
def test_expires_is_the_first_day_check_calls_the_stamp_stale(
    stamp: dt.date, limit: int, first_stale: dt.date
) -> None:
    assert expires(stamp, limit) == first_stale


def _file(path: str, text: str) -> StampedFile:
    return StampedFile(path=path, stamps=tuple(markdown_stamps(text)), sources={})


NOTES = """\
a (verified docs.example.org/a 2026-11)
b (verified 2026-12)
c (verified 2027-01)
d (verified 2027-09)
e (verified soon)
"""


def test_stale_now_due_within_the_window_and_neither() -> None:
    files = [_file("NOTES.md", NOTES)]
    stale, due = sort_stamps(files, today=dt.date(2027, 6, 1), limit_months=6, due_within_days=30)
    assert [(d.line, d.stamp, d.source, d.expires) for d in stale] == [
        (1, "verified docs.example.org/a 2026-11", "docs.example.org/a", dt.date(2027, 6, 1))
    ]
    # 2026-12 expires 2027-07-01, 30 days after 2027-06-01: the window's last day counts.
    assert [(d.line, d.expires) for d in due] == [(2, dt.date(2027, 7, 1))]
    # A day shorter and it is not due; the future and the undated stamps are never listed.
    _, due = sort_stamps(files, today=dt.date(2027, 6, 1), limit_months=6, due_within_days=29)
    assert due == ()
    stale, due = sort_stamps(files, today=dt.date(2027, 6, 1), limit_months=0, due_within_days=0)
    assert [d.line for d in stale] == [1, 2, 3]
    assert due == ()


def test_sources_come_from_the_stamp_else_from_its_yaml() -> None:
    found = StampedFile(
        path="failures.yaml",
        stamps=tuple(find_stamps("x:\n  verified: 2026-01\n", yaml_like=True)),
        sources={2: "https://example.org/x"},
    )
    stale, _ = sort_stamps([found], today=dt.date(2027, 1, 1), limit_months=6, due_within_days=0)
    assert [d.as_dict() for d in stale] == [
        {
            "path": "failures.yaml",
            "line": 2,
            "stamp": "verified: 2026-01",
            "source": "https://example.org/x",
        }
    ]


CATALOG = """\
version: 1
failures:
  - id: one
    source: 'https://github.com/o/r/issues/1 (the message)'
    verified: '2026-11'
  - id: two
    verified: '2026-11'
    sources: [https://a.example/x, https://b.example/y]
  - id: three
    verified: '2026-11'
"""


def test_key_sources_read_each_mapping_and_inherit_from_the_enclosing_one() -> None:
    assert key_sources(CATALOG) == {
        5: "https://github.com/o/r/issues/1 (the message)",
        7: "https://a.example/x; https://b.example/y",
    }
    front = "platform: x\ncharging:\n  source: https://c.example/price\n  verified: 2026-11\n"
    front += "sources:\n  - https://d.example/\nverified: 2026-11\n"
    # Front matter starts on the file's second line.
    assert key_sources(front, line_offset=1) == {
        5: "https://c.example/price",
        8: "https://d.example/",
    }
    nested = "sources: [https://top.example/]\nqueues:\n  - name: q\n    verified: 2026-11\n"
    assert key_sources(nested) == {4: "https://top.example/"}


def test_key_sources_walk_an_alias_bomb_once() -> None:
    bomb = "a: &a [{source: s, verified: 2026-11}]\n"
    for i in range(1, 30):  # 2**29 paths through the aliases, 30 distinct nodes
        bomb += f"{chr(97 + i % 26)}{i}: &n{i} [*{'a' if i == 1 else f'n{i - 1}'}, *{'a' if i == 1 else f'n{i - 1}'}]\n"
    assert key_sources(bomb) == {1: "s"}


@pytest.mark.parametrize("text", ["verified: [unclosed\n", "a:\n" + "- " * 100 + "verified\n"])
def test_key_sources_of_text_that_does_not_parse_or_nests_too_deep_is_empty(text: str) -> None:
    assert key_sources(text) == {}


def _ledger(*records: dict[str, Any], tail: str = "") -> ledger.Ledger:
    return ledger.parse("".join(json.dumps(r) + "\n" for r in records) + tail)


def _intent(
    lid: str, *, targets: list[str], time_s: int | None = 3600, **more: Any
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "v": 1,
        "kind": "intent",
        "ledger_id": lid,
        "time": "2027-05-31T20:00:00Z",
        "stage": "production",
        "targets": targets,
    }
    if time_s is not None:
        rec["time_s"] = time_s
    return rec | more


def _state(lid: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "kind": "state", "ledger_id": lid, "time": "2027-05-31T21:00:00Z", **fields}


NOW = dt.datetime(2027, 6, 1, 0, 0, tzinfo=UTC)


def _overdue(*records: dict[str, Any]) -> list[tuple[int, str]]:
    return [(f.line, f.message) for f in overdue(_ledger(*records), now=NOW)]


def test_a_job_running_past_its_limit_is_overdue_from_its_start() -> None:
    started = _state("L1", job_id="71", state="RUNNING", started="2027-05-31T22:30:00Z")
    assert _overdue(_intent("L1", targets=["a"]), started) == [
        (
            1,
            "job 71 is RUNNING in the ledger 1.5 h after it started, past its time limit of 01:00:00",
        )
    ]
    # Within the limit: nothing; the same job with a limit of two hours is fine.
    assert _overdue(_intent("L1", targets=["a"], time_s=7200), started) == []


def test_unknown_and_unanswered_count_from_submission_pending_and_ended_do_not() -> None:
    unknown = _state("L1", job_id="72", state="UNKNOWN", submitted="2027-05-31T21:00:00Z")
    assert _overdue(_intent("L1", targets=["a"]), unknown) == [
        (
            1,
            "job 72 is UNKNOWN in the ledger 3.0 h after it was submitted, past its time limit of 01:00:00",
        )
    ]
    # An intent never answered (a crash mid-submit): its first record's time is the clock.
    assert _overdue(_intent("L2", targets=["a"])) == [
        (
            1,
            "job L2 is UNKNOWN (no scheduler answer recorded) in the ledger 4.0 h after it was "
            "submitted, past its time limit of 01:00:00",
        )
    ]
    for state in ("PENDING", "COMPLETED", "TIMEOUT"):
        assert _overdue(_intent("L3", targets=["a"]), _state("L3", job_id="9", state=state)) == []
    refused = {"v": 1, "kind": "result", "ledger_id": "L4", "time": "2027-05-31T20:00:01Z"}
    assert _overdue(_intent("L4", targets=["a"]), refused | {"error": "sbatch: invalid"}) == []


def test_no_recorded_time_limit_no_verdict() -> None:
    running = _state("L1", job_id="73", state="RUNNING", started="2027-05-01T00:00:00Z")
    job = _ledger(_intent("L1", targets=["a"], time_s=None), running).jobs[0]
    assert time_limit(job) is None
    assert overdue(_ledger(_intent("L1", targets=["a"], time_s=None), running), now=NOW) == []
    for bad in (0, -5, True, 1.5, "3600"):
        odd = _intent("L1", targets=["a"], time_s=None) | {"time_s": bad}
        assert time_limit(_ledger(odd).jobs[0]) is None, bad


def test_an_older_intent_gives_its_limit_through_its_charge() -> None:
    charged = _intent("L1", targets=["a"], time_s=None)
    charged["charge"] = {"unit": "node-hours", "rate": 1.0, "time_s": 900}
    assert time_limit(_ledger(charged).jobs[0]) == 900
    # The intent's own time_s wins: it is the limit the job was submitted with.
    assert time_limit(_ledger(charged | {"time_s": 1800}).jobs[0]) == 1800


def test_array_tasks_are_judged_by_their_own_start() -> None:
    tasks = {
        "0": {"state": "COMPLETED", "started": "2027-05-31T20:10:00Z"},
        "1": {"state": "RUNNING", "started": "2027-05-31T22:00:00Z"},
        "2": {"state": "RUNNING", "started": "2027-05-31T23:30:00Z"},
        "3": {"state": "PENDING"},
    }
    array = _state("L1", job_id="80", state="RUNNING", tasks=tasks)
    assert _overdue(_intent("L1", targets=["a", "b", "c", "d"]), array) == [
        (
            1,
            "job 80 (b) is RUNNING in the ledger 2.0 h after it started, past its time limit of 01:00:00",
        )
    ]
    # Several late tasks make one finding, told by the longest-late one.
    tasks["2"]["started"] = "2027-05-31T21:00:00Z"
    tasks["0"] = {"state": "UNKNOWN", "started": "2027-05-31T22:30:00Z"}
    array = _state("L1", job_id="80", state="RUNNING", tasks=tasks)
    assert _overdue(_intent("L1", targets=["a", "b", "c", "d"]), array) == [
        (
            1,
            "job 80 (c and 2 more tasks) is RUNNING in the ledger 3.0 h after it started, "
            "past its time limit of 01:00:00",
        )
    ]
    # An array task with no start of its own has no clock (others may have run before it).
    bare = _state("L2", job_id="81", state="RUNNING", started="2027-05-01T00:00:00Z")
    assert _overdue(_intent("L2", targets=["a", "b"]), bare) == []


def test_ledger_health_and_the_whole_audit() -> None:
    text = (
        json.dumps(_intent("L1", targets=["a"], time_s=None))
        + "\nnot json\n"
        + json.dumps(_state("L1", job_id="1", state="COMPLETED"))
        + '\n{"v": 1, "kind": "st'
    )
    wrap = Finding(path="scripts/x.sh", line=1, col=1, id="WRAP001", message="m", hint="h")
    result = audit(
        [_file("NOTES.md", NOTES)],
        ledger=ledger.parse(text),
        findings=[wrap],
        today=dt.date(2027, 6, 1),
        now=NOW,
        limit_months=6,
    )
    assert [(f.path, f.line, f.id) for f in result.standing] == [
        (".campaign/ledger.jsonl", 2, "AUDIT002"),
        (".campaign/ledger.jsonl", 4, "AUDIT001"),
        ("scripts/x.sh", 1, "WRAP001"),
    ]
    assert result.standing[0].message == "ledger line 2 cannot be read (not valid JSON)"
    assert result.standing[1].message == (
        "the ledger's last line is torn (not valid JSON): a write was cut short"
    )
    assert [d.line for d in result.stale] == [1]
    assert [d.line for d in result.due] == [2]
    assert result.needs_action
    calm = audit(
        [], ledger=ledger.parse(""), findings=[], today=dt.date(2027, 6, 1), now=NOW, limit_months=6
    )
    assert not calm.needs_action
    assert calm.horizon == dt.date(2027, 7, 1)
