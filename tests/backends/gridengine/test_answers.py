"""The Grid Engine backend reads real answers of the test cell (tests/runner/recorded/
gridengine_*: qsub -terse, qstat -u -xml, qacct -j), recorded by dev/gridengine_cell.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from campaignops.backends import command as scheduler
from campaignops.backends.gridengine import backend, qstatxml, states

RECORDED = Path(__file__).resolve().parents[2] / "runner" / "recorded"
CET = timezone(timedelta(hours=1))


def _read(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


@pytest.fixture
def be(tmp_path: Path) -> backend.GridEngineBackend:
    return backend.GridEngineBackend(tmp_path, "generic-gridengine")


def test_job_ids_from_qsub_terse(be: backend.GridEngineBackend) -> None:
    assert be.parse_job_id(_read("gridengine_qsub_terse_array.txt")) == "1"
    assert be.parse_job_id(_read("gridengine_qsub_terse_single.txt")) == "6"
    with pytest.raises(qstatxml.GridEngineOutputError):
        be.parse_job_id("Your job 6 has been submitted\n")


def test_task_ranges_of_waiting_tasks_become_one_state_per_task() -> None:
    found = states.parse_states([_read("gridengine_qstat_u_xml_pending_ranges.xml")])
    tc = found["2"]  # -t 1-5 -tc 2: tasks 1 and 2 run, 3-5:1 wait
    assert tc.state == "RUNNING"
    assert {i: t.state for i, t in tc.tasks.items()} == {
        0: "RUNNING", 1: "RUNNING", 2: "PENDING", 3: "PENDING", 4: "PENDING",
    }  # fmt: skip
    assert found["1"].tasks[0].reason is not None and "Eqw" in found["1"].tasks[0].reason
    assert found["3"].tasks[2].reason == "held"
    held = states.parse_states([_read("gridengine_qstat_u_xml_held_list.xml")])["5"]
    assert {i: t.state for i, t in held.tasks.items()} == {
        0: "RUNNING", 1: "PENDING", 2: "PENDING", 3: "RUNNING",
    }  # fmt: skip
    assert qstatxml.task_ids("1-9:4,12") == [1, 5, 9, 12]


def test_qacct_verdicts_failed_codes_and_times_in_utc() -> None:
    found = states.parse_states([_read("gridengine_qacct_o_j_berlin.txt")], zone=CET)
    by_name = {s.name: s for s in found.values()}
    assert (by_name["rec.exit0"].state, by_name["rec.exit0"].exit_code) == ("COMPLETED", 0)
    assert (by_name["rec.exit3"].state, by_name["rec.exit3"].exit_code) == ("FAILED", 3)
    hrt, hvmem = by_name["rec.hrt"], by_name["rec.hvmem"]
    assert (hrt.state, hrt.exit_code, hrt.timelimit) == ("TIMEOUT", 137, "00:00:05")
    assert hvmem.state == "OUT_OF_MEMORY" and hvmem.req_mem == "102400K"
    assert hvmem.max_rss == "158940K"  # maxvmem 155.215MB
    assert by_name["rec.qdel"].state == "CANCELLED"
    assert by_name["rec.exit100"].reason == "failed 30: application error returned"
    assert by_name["rec.exit99"].reason == "failed 25: rescheduling"
    # 20:40:36 in Berlin (CET) is 19:40:36 UTC, when the job ran
    assert by_name["rec.exit0"].started == "2026-11-27T20:40:36+01:00"
    assert (
        datetime.fromisoformat(str(by_name["rec.exit0"].started)).astimezone(timezone.utc).hour
        == 19
    )
    arr = found["4"]
    assert arr.state == "COMPLETED" and sorted(arr.tasks) == [0, 1, 2]
    never = found["1"].tasks[0]  # its log directory was missing: failed 26, never started
    assert never.state == "FAILED" and never.started is None
    assert never.reason == "failed 26: opening input/output file"


def test_the_array_record_alone_reads_the_same(be: backend.GridEngineBackend) -> None:
    arr = be.parse_states([_read("gridengine_qacct_j_array.txt")])["4"]
    # Each task names its job and its 0-based index (tests/backends/test_contract.py); 4.t is
    # how qdel names Grid Engine's task t.
    assert [(t.job_id, t.task) for t in arr.tasks.values()] == [("4", 0), ("4", 1), ("4", 2)]
    assert be.task_id("4", 0) == "4.1"
    assert be.log_path("4", name="c.t.smoke", index=2) == "logs/c.t.smoke.o4.3"
    assert be.cancel_argv(["4", "5.2"]) == ["qdel", "4", "5.2"]


def test_live_and_ended_tasks_of_one_array_fold_together() -> None:
    ended = _read("gridengine_qacct_j_array.txt")
    xml = _read("gridengine_qstat_u_xml_pending_ranges.xml").replace(
        "<JB_job_number>2</JB_job_number>", "<JB_job_number>4</JB_job_number>"
    )
    arr = states.parse_states([xml, ended])["4"]
    assert arr.state == "RUNNING"  # the live tasks win over the ended records


def test_qacct_before_any_job_ended_is_an_empty_answer() -> None:
    assert states.parse_states(["No jobs running since startup\n"]) == {}
    assert 1 in backend.PARTIAL_ANSWER


def test_a_task_deleted_while_it_waited_is_cancelled_by_its_zombie() -> None:
    """qstat -s prsz after qdel of a held array (job 1) and a held job (3), and a job that ran
    (2): only qstat's zombie list knows 1 and 3 (qacct never does); none of them has a log."""
    xml = _read("gridengine_qstat_u_xml_s_prsz_zombies.xml")
    acct = _read("gridengine_qacct_o_j_zombies.txt")
    found = states.parse_states([xml, acct], started=lambda job, task, name: job == "2")
    assert found["1"].state == "CANCELLED" and len(found["1"].tasks) == 3
    assert {t.reason for t in found["1"].tasks.values()} == {states.DELETED_WAITING}
    assert found["3"].state == "CANCELLED"
    assert found["2"].state == "COMPLETED"  # its qacct record wins over its zombie
    # A zombie with a log whose record is not read yet (the accounting flush): not judged.
    lagging = states.parse_states([xml], started=lambda job, task, name: True)
    assert {s.state for s in lagging.values()} == {"UNKNOWN", "RUNNING"}
    assert lagging["3"].state == "UNKNOWN"


def test_lookup_finds_a_lost_job_by_name_in_one_qstat_and_one_qacct(
    be: backend.GridEngineBackend,
) -> None:
    answers = {
        "qstat": _read("gridengine_qstat_u_xml_pending_ranges.xml"),
        "qacct": _read("gridengine_qacct_o_j_berlin.txt"),
    }
    calls: list[str] = []

    def call(argv: Sequence[str]) -> scheduler.Call:
        calls.append(argv[2])  # past env TZ=UTC0
        return scheduler.Call(argv=tuple(argv), stdout=answers[argv[2]], attempts=1)

    found = be.lookup(["rec.hrt", "rec.tc"], call)
    assert calls == ["qstat", "qacct"]
    assert {s.name for s in found.values()} == {"rec.hrt", "rec.tc"}
    assert found["10"].state == "TIMEOUT" and found["2"].state == "RUNNING"
