"""`campaign render`: each view rendered in full, files rewritten only inside their blocks."""

from __future__ import annotations

import json
from pathlib import Path

from campaignops.core.files import FileReader
from campaignops.views import render as views

BEGIN = "<!-- campaign:begin {} -->\n"
END = "<!-- campaign:end {} -->\n"
COMMIT_A = "0123456789abcdef0123456789abcdef01234567"
COMMIT_B = "fedcba9876543210fedcba9876543210fedcba98"


def block(path: Path, name: str) -> str:
    """The text between a block's markers (what the tool owns)."""
    text = path.read_text()
    return text.split(BEGIN.format(name), 1)[1].split(END.format(name), 1)[0]


def test_clean_fixture_blocks_are_rendered_in_full(campaign: Path) -> None:
    assert block(campaign / "AGENTS.md", "backends") == (
        "\n"
        "| order | backend | kind | scheduler | smoke partition/queue | verified |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| 1 | [local](backends/local.md) | local | none | default | 2026-11 |\n"
        "| 2 | [generic-slurm](backends/generic-slurm.md) | slurm | slurm | debug | 2026-10 |\n"
        "\n"
    )
    assert block(campaign / "STATUS.md", "stages") == (
        "\n"
        "| target | smoke | single | production |\n"
        "| --- | --- | --- | --- |\n"
        "| no jobs yet |  |  |  |\n"
        "\n"
    )
    assert block(campaign / "STATUS.md", "jobs") == (
        "\n"
        "| job | targets | stage | backend | state | queue wait | run time | exit | diagnosis | commit |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| no jobs yet |  |  |  |  |  |  |  |  |  |\n"
        "\n"
    )


SLURM_PAGE = """\
---
platform: generic-slurm
kind: slurm
scheduler: slurm
partitions:
  - name: compute
    purpose: production
  - name: "debug|short"
    purpose: smoke
  - name: other-smoke
    purpose: smoke
verified: 2026-10
---

# Backend: generic Slurm
"""


def test_backends_in_failover_order_with_missing_page_and_escaped_pipe(campaign: Path, run) -> None:
    policy = campaign / "campaign.yaml"
    policy.write_text(
        policy.read_text().replace(
            "backends: [local, generic-slurm]", "backends: [generic-slurm, nowhere, local]"
        )
    )
    (campaign / "backends" / "generic-slurm.md").write_text(SLURM_PAGE)

    result = run("render")

    assert (result.code, result.out) == (0, "rendered: AGENTS.md\n")
    assert block(campaign / "AGENTS.md", "backends") == (
        "\n"
        "| order | backend | kind | scheduler | smoke partition/queue | verified |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        "| 1 | [generic-slurm](backends/generic-slurm.md) | slurm | slurm | debug\\|short | 2026-10 |\n"
        "| 2 | nowhere | no page | — | — | — |\n"
        "| 3 | [local](backends/local.md) | local | none | default | 2026-11 |\n"
        "\n"
    )


FAILURES = """\
version: 1
failures:
  - id: crlf-script
    category: line-endings
    matchers: ["\\\\r"]
    symptom: "fails with $'\\\\r': command not found"
    cause: CRLF
    fix: convert to LF
    source: https://www.gnu.org/software/bash/manual/
    verified: 2026-10
  - id: walltime
    category: timeout
    matchers: ["DUE TO TIME LIMIT"]
    symptom: |
      CANCELLED AT 2026-01-01
      DUE TO TIME LIMIT
    cause: ran out of time
    fix: checkpoint, and request <= the partition's limit | or split
    source: slurm.schedmd.com/sbatch.html
    verified: 2026-06
  - id: cuda-oom
    category: oom-gpu
    matchers: ["CUDA out of memory"]
    symptom: CUDA out of memory
    cause: batch too large
    fix: smaller batch
    source: pytorch.org
    verified: 2026-09
  - id: bom
    category: line-endings
    matchers: ["\\\\xef"]
    symptom: first line fails
    cause: a BOM
    fix: strip it
    source: local experience
    verified: 2026-10
"""


def test_failures_grouped_by_category_in_schema_order(campaign: Path, run) -> None:
    (campaign / "failures.yaml").write_text(FAILURES)

    assert run("render").out == "rendered: FAILURES.md\n"
    assert block(campaign / "FAILURES.md", "failures") == (
        "\n"
        "### oom-gpu\n"
        "\n"
        "| id | symptom | fix | source | verified |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| cuda-oom | CUDA out of memory | smaller batch | pytorch.org | 2026-09 |\n"
        "\n"
        "### timeout\n"
        "\n"
        "| id | symptom | fix | source | verified |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| walltime | CANCELLED AT 2026-01-01 DUE TO TIME LIMIT | checkpoint, and request "
        "&lt;= the partition's limit \\| or split | slurm.schedmd.com/sbatch.html | 2026-06 |\n"
        "\n"
        "### line-endings\n"
        "\n"
        "| id | symptom | fix | source | verified |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| crlf-script | fails with $'\\r': command not found | convert to LF "
        "| https://www.gnu.org/software/bash/manual/ | 2026-10 |\n"
        "| bom | first line fails | strip it | local experience | 2026-10 |\n"
        "\n"
    )


def test_empty_failure_catalog(campaign: Path, run) -> None:
    (campaign / "failures.yaml").write_text("version: 1\nfailures: []\n")
    run("render")
    assert block(campaign / "FAILURES.md", "failures") == "\n_No failures catalogued yet._\n\n"


def record(**fields: object) -> str:
    return json.dumps({"v": 1, **fields})


def intent(lid: str, time: str, stage: str, backend: str, targets: list[str], commit: str) -> str:
    return record(
        kind="intent",
        ledger_id=lid,
        time=time,
        backend=backend,
        stage=stage,
        targets=targets,
        fingerprint="sha256:" + "a" * 64,
        commit=commit,
        manifest="manifests/smoke.yaml",
    )


def result(lid: str, time: str, **fields: object) -> str:
    return record(kind="result", ledger_id=lid, time=time, **fields)


def state(lid: str, time: str, **fields: object) -> str:
    return record(kind="state", ledger_id=lid, time=time, **fields)


GRID = ["lr0.1_s1", "lr0.1_s2", "lr0.01_s1", "lr0.01_s2"]
LEDGER = [
    # Written first, submitted last but one: the file's order is not the table's.
    intent("L-ffffff", "2026-11-01T14:00:00Z", "smoke", "local", ["lr0.01_s1"], COMMIT_A),
    result("L-ffffff", "2026-11-01T14:00:00Z", job_id="120", submitted="2026-11-01T14:00:00Z"),
    state("L-ffffff", "2026-11-01T14:09:00Z", state="COMPLETED", exit_code=0),
    intent("L-aaaaaa", "2026-11-01T10:00:00Z", "smoke", "local", ["lr0.1_s1"], COMMIT_A),
    result(
        "L-aaaaaa",
        "2026-11-01T10:00:05Z",
        job_id="101",
        submitted="2026-11-01T10:00:05Z",
        state="PENDING",
    ),
    state(
        "L-aaaaaa",
        "2026-11-01T10:05:00Z",
        job_id=None,
        state="COMPLETED",
        exit_code=0,
        started="2026-11-01T10:01:05Z",
        ended="2026-11-01T10:03:10Z",
    ),
    # 11:30+02:00 is 09:30Z: the first submission, though it reads later.
    intent("L-dddddd", "2026-11-01T11:29:00+02:00", "smoke", "local", ["lr0.01_s1"], COMMIT_A),
    result(
        "L-dddddd", "2026-11-01T11:30:00+02:00", job_id="99", submitted="2026-11-01T11:30:00+02:00"
    ),
    state("L-dddddd", "2026-11-01T11:31:00+02:00", state="FAILED", exit_code=1, run_time_s=42),
    intent("L-cccccc", "2026-11-01T12:00:00Z", "single", "local", ["lr0.1_s1"], COMMIT_A),
    intent("L-eeeeee", "2026-11-01T13:00:00Z", "single", "generic-slurm", ["lr0.1_s2"], COMMIT_A),
    result("L-eeeeee", "2026-11-01T13:00:01Z", error="sbatch: error: invalid partition|x"),
    intent("L-bbbbbb", "2026-11-02T09:00:00Z", "production", "generic-slurm", GRID, COMMIT_B),
    result(
        "L-bbbbbb",
        "2026-11-02T09:00:01Z",
        job_id="4242",
        submitted="2026-11-02T09:00:01Z",
        array="0-3%2",
    ),
    state("L-bbbbbb", "2026-11-02T10:02:06Z", state="RUNNING", queue_wait_s=3725),
]


def test_stages_and_jobs_from_a_folded_ledger(campaign: Path, run) -> None:
    torn = state("L-bbbbbb", "2026-11-02T11:00:00Z", state="COMPLETED")[:30]
    (campaign / ".campaign" / "ledger.jsonl").write_text("\n".join([*LEDGER, torn]))

    assert run("render").out == "rendered: STATUS.md\n"
    assert block(campaign / "STATUS.md", "stages") == (
        "\n"
        "| target | smoke | single | production |\n"
        "| --- | --- | --- | --- |\n"
        # The smokes recorded a made-up fingerprint, not manifests/smoke.yaml's config now: by
        # the smoke_first gate's rule (model/smokes.py) they ran an older config.
        "| lr0.01_s1 | COMPLETED (older config) (120) | — | RUNNING (4242 task 2) |\n"
        "| lr0.01_s2 | — | — | RUNNING (4242 task 3) |\n"
        "| lr0.1_s1 | COMPLETED (older config) (101) | intent only | RUNNING (4242 task 0) |\n"
        "| lr0.1_s2 | — | submit failed | RUNNING (4242 task 1) |\n"
        "\n"
    )
    assert block(campaign / "STATUS.md", "jobs") == (
        "\n"
        "| job | targets | stage | backend | state | queue wait | run time | exit | diagnosis | commit |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| 4242 | lr0.1_s1, lr0.1_s2, lr0.01_s1 (+1 more) | production | generic-slurm "
        "| RUNNING | 1h 02m | — | — | — | fedcba9876 |\n"
        "| 120 | lr0.01_s1 | smoke | local | COMPLETED | — | — | 0 | — | 0123456789 |\n"
        "| — | lr0.1_s2 | single | generic-slurm | submit failed | — | — | — | — | 0123456789 |\n"
        "| — | lr0.1_s1 | single | local | intent only | — | — | — | — | 0123456789 |\n"
        "| 101 | lr0.1_s1 | smoke | local | COMPLETED | 1m 00s | 2m 05s | 0 | — | 0123456789 |\n"
        "| 99 | lr0.01_s1 | smoke | local | FAILED | — | 42s | 1 | unknown | 0123456789 |\n"
        "\n"
        "- .campaign/ledger.jsonl line 16 skipped: not valid JSON (torn last line)\n"
        "\n"
    )


def test_durations_read_as_people_write_them() -> None:
    assert [views.duration(s) for s in (None, 0, 59.4, 60, 3599, 3600, 86399, 90061)] == [
        "—",
        "0s",
        "59s",
        "1m 00s",
        "59m 59s",
        "1h 00m",
        "23h 59m",
        "1d 01h",
    ]


def test_cells_stay_on_one_line_with_pipes_escaped() -> None:
    assert views.cell("a |b\n\tc<d") == "a \\|b c&lt;d"
    assert [views.cell(v) for v in (None, "", "  ", 0, False)] == ["—", "—", "—", "0", "False"]


SURROUNDED = (
    "\ufeff# Status  \n\nkeep   this\t\n"
    "<!-- campaign:begin jobs -->\nhand-edited junk\n<!-- campaign:end jobs -->\n"
    "\n\ntrailing text without a final newline"
)


def test_render_rewrites_only_inside_blocks_and_is_idempotent(campaign: Path, run) -> None:
    status = campaign / "STATUS.md"
    status.write_bytes(SURROUNDED.encode())
    status.chmod(0o640)
    agents_before = (campaign / "AGENTS.md").stat().st_mtime_ns

    first = run("render")

    jobs = views.render_jobs(views.Sources(FileReader(campaign)))
    assert (first.code, first.out) == (0, "rendered: STATUS.md\n")
    assert status.read_bytes() == SURROUNDED.replace("hand-edited junk\n", f"\n{jobs}\n\n").encode()
    assert status.stat().st_mode & 0o777 == 0o640
    assert (campaign / "AGENTS.md").stat().st_mtime_ns == agents_before
    mtime = status.stat().st_mtime_ns

    second = run("render")

    assert (second.code, second.out) == (0, "")
    assert status.stat().st_mtime_ns == mtime
    assert not [p for p in campaign.iterdir() if p.name.endswith(".tmp")]


def test_render_check_writes_nothing_and_exits_1(campaign: Path, run) -> None:
    (campaign / "failures.yaml").write_text(FAILURES)
    status = campaign / "STATUS.md"
    status.write_text(status.read_text().replace("| no jobs yet |", "| stale |"))
    before = {p: p.read_bytes() for p in campaign.glob("*.md")}

    result = run("render", "--check")

    assert (result.code, result.out) == (1, "out of sync: FAILURES.md\nout of sync: STATUS.md\n")
    assert {p: p.read_bytes() for p in campaign.glob("*.md")} == before
    assert run("render").code == 0
    assert run("render", "--check").code == 0


def test_unreadable_source_is_exit_2_naming_it_and_nothing_is_written(campaign: Path, run) -> None:
    (campaign / "failures.yaml").write_text("version: 1\nfailures: [\n")
    status = campaign / "STATUS.md"
    status.write_text(status.read_text().replace("| no jobs yet |", "| stale |"))
    before = status.read_bytes()

    result = run("render")

    assert result.code == 2
    assert "failures.yaml: not valid YAML (line 3, column 1" in result.err
    assert status.read_bytes() == before


def test_broken_front_matter_names_the_page(campaign: Path, run) -> None:
    page = campaign / "backends" / "local.md"
    page.write_text(page.read_text().replace("kind: local", "kind: [local"))
    result = run("render")
    assert result.code == 2
    assert "backends/local.md: front matter is not valid YAML (line " in result.err


def test_marker_defect_is_exit_2_naming_file_and_line(campaign: Path, run) -> None:
    (campaign / "failures.yaml").write_text(FAILURES)
    notes = campaign / "NOTES.md"
    notes.write_text("# Notes\n\n<!-- campaign:begin jobs -->\n")
    before = (campaign / "FAILURES.md").read_bytes()

    result = run("render")

    assert result.code == 2
    assert "NOTES.md: line 3: view 'jobs' has no end marker" in result.err
    assert (campaign / "FAILURES.md").read_bytes() == before


def test_symlinked_markdown_is_rendered_through_the_link_once(campaign: Path, run) -> None:
    (campaign / "docs").mkdir()
    (campaign / "docs" / "STATUS.md").symlink_to("../STATUS.md")
    status = campaign / "STATUS.md"
    status.write_text(status.read_text().replace("| no jobs yet |", "| stale |"))

    assert run("render").out == "rendered: STATUS.md\n"
    assert (campaign / "docs" / "STATUS.md").is_symlink()
    assert "| no jobs yet |" in status.read_text()


def test_budget_view_shows_spent_against_the_cap_without_a_clock(campaign: Path, run) -> None:
    status = campaign / "STATUS.md"
    status.write_text(status.read_text() + "\n" + BEGIN.format("budget") + END.format("budget"))
    assert run("render").out == "rendered: STATUS.md\n"
    assert block(status, "budget") == (
        "\n_No authorized backend has a charging model: nothing is charged._\n\n"
    )
    page = campaign / "backends" / "generic-slurm.md"
    charging = (
        "charging:\n  unit: gpu-hours\n  source: https://example.org/allocations\n"
        "  verified: 2026-11\n"
    )
    page.write_text("---\n" + charging + page.read_text()[4:])
    policy = campaign / "campaign.yaml"
    policy.write_text(
        policy.read_text().replace(
            "  hpc_allocation_cap_percent: 80\n",
            "  hpc_allocation_cap_percent: 80\n  allocations: {generic-slurm: 100}\n",
        )
    )
    intent = {
        "v": 1, "kind": "intent", "ledger_id": "L-gpu", "time": "2026-11-02T10:00:00Z",
        "backend": "generic-slurm", "stage": "production", "targets": ["a", "b"],
        "fingerprint": "sha256:" + "0" * 64, "commit": COMMIT_A, "manifest": "manifests/m.yaml",
        "job_id": "77", "charge": {"unit": "gpu-hours", "rate": 2, "time_s": 7200},
    }  # fmt: skip
    done = {
        "v": 1, "kind": "state", "ledger_id": "L-gpu", "time": "2026-11-02T12:00:00Z",
        "state": "RUNNING", "tasks": {"0": {"state": "COMPLETED", "run_time_s": 5400},
                                      "1": {"state": "RUNNING"}},
    }  # fmt: skip
    ledger = campaign / ".campaign" / "ledger.jsonl"
    ledger.parent.mkdir(exist_ok=True)
    ledger.write_text(json.dumps(intent) + "\n" + json.dumps(done) + "\n")
    assert run("render").out == "rendered: STATUS.md\n"
    # a: 1.5 h x 2 GPUs = 3 spent; b runs: its 2 h x 2 GPUs = 4 reserved (no clock in a view)
    assert block(status, "budget") == (
        "\n"
        "| backend | spent | reserved | cap | of cap |\n"
        "| --- | --- | --- | --- | --- |\n"
        "| generic-slurm | 3 gpu-hours | 4 gpu-hours | 80 gpu-hours (80% of the 100 gpu-hours "
        "allocation (budgets.allocations.generic-slurm)) | 9% |\n"
        "\n"
        "- not charged (no charging model on their page): local\n"
        "- reserved: what queued and running tasks may still use, up to their time limit\n"
        "\n"
    )
    assert run("render", "--check").code == 0  # idempotent: no clock
