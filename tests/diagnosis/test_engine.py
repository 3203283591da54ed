"""The matching rule, one test per clause (campaignops.learn.diagnosis.engine's docstring)."""

from __future__ import annotations

from typing import Any

from campaignops.learn.diagnosis import engine
from campaignops.learn.diagnosis.verdicts import Evidence
from campaignops.model import catalog


def entry(entry_id: str, category: str, *matchers: str, **more: Any) -> dict[str, Any]:
    return {"id": entry_id, "category": category, "matchers": list(matchers), **more}


CATALOG = catalog.from_data(
    {
        "version": 1,
        "failures": [
            entry("runtime-error", "other", r"RuntimeError"),
            entry("cuda-oom", "oom-gpu", r"CUDA out of memory\. Tried to allocate"),
            entry(
                "slurm-oom",
                "oom-host",
                r"tasks? [0-9-]+: Out Of Memory",
                r"oom[-_]kill event",
                backends=["slurm"],
                verdicts=["OUT_OF_MEMORY"],
            ),
            entry("pbs-mem", "oom-host", r"job killed: mem", backends=["generic-pbs"]),
            entry("host-oom-any", "oom-host", r"Out Of Memory"),
            entry("peer-reset", "nccl", r"Connection reset by peer"),
            entry(
                "peer-closed",
                "nccl",
                r"socketProgress: Connection closed by remote peer",
                warnings=True,
            ),
            entry("disk-full", "disk-full", r"No space left on device"),
            entry("quota", "quota-limit", r"No space left on device"),
            entry("bad", "other", r"^(a+)+$"),
            "not an entry",
            entry("no-matchers", "other"),
        ],
    }
)


def run(text: str, **kw: Any) -> engine.Diagnosis:
    return engine.diagnose(text, catalog=CATALOG, **kw)


def test_unsafe_matchers_and_malformed_entries_are_left_out() -> None:
    ids = [e.id for e in CATALOG.entries]
    assert "no-matchers" not in ids and "bad" not in ids  # its one matcher is unsafe
    assert ids[:2] == ["runtime-error", "cuda-oom"]


def test_matching_is_case_insensitive() -> None:
    assert (
        run("torch.OutOfMemoryError: cuda OUT OF MEMORY. tried to allocate 2 GiB").entry_id
        == "cuda-oom"
    )


def test_the_most_specific_matcher_on_a_line_wins_whatever_the_file_order() -> None:
    # runtime-error comes first in the file; cuda-oom's anchor is longer.
    found = run("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB")
    assert (found.entry_id, found.category) == ("cuda-oom", "oom-gpu")
    # Case-insensitive, the general host OOM entry reaches this line too, and loses.
    assert {m.entry.id for m in found.matches} == {"runtime-error", "cuda-oom", "host-oom-any"}


def test_the_earliest_matching_line_wins_over_the_consequences_that_follow() -> None:
    log = (
        "epoch 3 step 10\n"
        "[rank1]: RuntimeError: CUDA out of memory. Tried to allocate 1 GiB\n"
        "[rank0]: RuntimeError: Connection reset by peer\n"
    )
    found = run(log)
    assert found.entry_id == "cuda-oom"
    assert "line 2" in found.why


def test_an_entry_for_another_backend_does_not_count() -> None:
    line = "srun: error: n1: tasks 1-3: Out Of Memory"
    assert run(line, backend="generic-slurm", kind="slurm").entry_id == "slurm-oom"
    assert run(line, backend="generic-pbs", kind="pbs").entry_id == "host-oom-any"


def test_an_entry_written_for_this_backend_beats_a_general_one_of_equal_reach() -> None:
    line = "srun: error: n1: task 0: Out Of Memory"
    assert run(line, backend="cluster-x", kind="slurm").entry_id == "slurm-oom"


def test_without_a_backend_every_entry_counts() -> None:
    assert run("srun: error: n1: task 0: Out Of Memory").entry_id == "slurm-oom"


def test_the_verdict_decides_the_category_and_lines_pick_the_entry_within_it() -> None:
    log = "RuntimeError: Connection reset by peer\nslurmstepd: error: Detected 1 oom_kill event\n"
    oom = Evidence(state="OUT_OF_MEMORY", exit_code=0)
    found = run(log, evidence=oom, backend="generic-slurm", kind="slurm")
    assert (found.entry_id, found.category) == ("slurm-oom", "oom-host")
    assert "OUT_OF_MEMORY" in found.why
    # Without the verdict the earliest line speaks.
    assert run(log).entry_id == "peer-reset"


def test_a_verdict_with_no_matching_line_names_the_entry_that_lists_it() -> None:
    found = run("", evidence=Evidence(state="OUT_OF_MEMORY"), backend="b", kind="slurm")
    assert (found.entry_id, found.category, found.signature) == (
        "slurm-oom",
        "oom-host",
        "slurm-oom",
    )
    # On PBS no entry lists the verdict: the category alone, no guessed entry.
    found = run("", evidence=Evidence(state="OUT_OF_MEMORY"), backend="generic-pbs", kind="pbs")
    assert (found.entry_id, found.category, found.signature) == (None, "oom-host", "oom-host")


def test_warning_lines_count_only_for_entries_that_opt_in_and_only_without_an_error() -> None:
    warn = "NCCL WARN socketProgress: Connection closed by remote peer"
    assert run(warn).entry_id == "peer-closed"
    assert run("UserWarning: No space left on device, serial mode").entry_id is None
    both = warn + "\nRuntimeError: Connection reset by peer\n"
    assert run(both).entry_id == "peer-reset"


def test_two_categories_tied_give_no_answer() -> None:
    found = run("OSError: [Errno 28] No space left on device")
    assert (found.entry_id, found.category) == (None, None)
    assert "no answer" in found.why
    assert {m.entry.id for m in found.matches} == {"disk-full", "quota"}


def test_an_unknown_failure_is_signed_by_its_normalised_last_error_line() -> None:
    def tail(path: str, n: int, addr: str) -> str:
        return (
            "Traceback (most recent call last):\n"
            f'  File "{path}/run.py", line {n}, in <module>\n'
            f"ValueError: shape mismatch (32, {n}) at {addr} in {path}/model.ckpt\n"
            f"epoch {n} done\n"
        )

    first = run(tail("/home/ada/x", 17, "0x7f3a2b"), evidence=Evidence(state="FAILED", exit_code=1))
    second = run(
        tail("/scratch/j/y", 4093, "0xdead"), evidence=Evidence(state="FAILED", exit_code=1)
    )
    assert first.category is None and first.entry_id is None
    assert first.signature == second.signature
    assert first.signature == "FAILED:1 ValueError: shape mismatch (<n>, <n>) at <hex> in <path>"


def test_different_unknown_errors_sign_differently_and_a_silent_log_signs_by_state() -> None:
    failed = Evidence(state="FAILED", exit_code=1)
    a = run("KeyError: 'lr'\n", evidence=failed).signature
    b = run("FileNotFoundError: cfg.yaml\n", evidence=failed).signature
    assert a != b
    assert (
        run("all good\nstep 5\n", evidence=Evidence(state="FAILED", exit_code=137)).signature
        == "FAILED:137"
    )


def test_a_progress_bar_and_colours_do_not_change_the_signature() -> None:
    failed = Evidence(state="FAILED", exit_code=1)
    noisy = "10%|#   | 1/10\r 50%|#####| 5/10\r\x1b[31mValueError: bad loss at step 812\x1b[0m\n"
    plain = "ValueError: bad loss at step 3\n"
    assert run(noisy, evidence=failed).signature == run(plain, evidence=failed).signature


def test_a_refining_entry_never_answers_alone_but_overrides_the_entry_it_refines() -> None:
    refined = catalog.from_data(
        {
            "version": 1,
            "failures": [
                entry("quota", "quota-limit", r"Disk quota exceeded"),
                entry("oom", "oom-host", r"Killed"),
                entry("files-over", "inodes", r"\d+k\*\s+\d+k", refines=["quota"]),
            ],
        }
    )
    table = "    3289M  51200M  76800M            321k*   300k    350k   none"
    error = "cp: cannot create regular file 'x': Disk quota exceeded"
    for text in (f"{error}\n{table}", f"{table}\n{error}"):
        found = engine.diagnose(text, catalog=refined)
        assert (found.entry_id, found.category) == ("files-over", "inodes"), text
        assert "refines quota into files-over" in found.why
    assert engine.diagnose(table, catalog=refined).category is None
    assert engine.diagnose(f"{table}\nKilled", catalog=refined).entry_id == "oom"
    assert engine.diagnose(error, catalog=refined).entry_id == "quota"


INODES = catalog.from_data(
    {
        "version": 1,
        "failures": [
            entry("disk-full", "disk-full", r"No space left on device"),
            entry(
                "df-inodes-full",
                "inodes",
                r"^\S+\s+\d+[kmg]?\s+\d+[kmg]?\s+\d+[kmg]?\s+100%\s+/",
                table_header=[r"^Filesystem\s+Inodes\s+IUsed\s+IFree\s+IUse%"],
                refines=["disk-full"],
                standalone=True,
            ),
        ],
    }
)
DF_I = "Filesystem     Inodes IUsed IFree IUse% Mounted on"
DF_H = "Filesystem      Size  Used Avail Use% Mounted on"
ROW = "/dev/vda1        640K  640K     0  100% /"


def test_a_table_row_counts_only_under_its_header() -> None:
    # A df -h row at 100 % reads exactly like a df -i row: only the header tells them apart.
    assert engine.diagnose(f"{DF_I}\n{ROW}", catalog=INODES).entry_id == "df-inodes-full"
    assert engine.diagnose(f"{DF_H}\n{ROW}", catalog=INODES).category is None
    assert engine.diagnose(ROW, catalog=INODES).category is None
    # The table ends at the first line that is not a row: a later df -h table is not read.
    later = f"{DF_I}\n/dev/vda1  640K  12  628K  1% /\n$ df -h\n{DF_H}\n{ROW}"
    assert engine.diagnose(later, catalog=INODES).category is None


def test_a_standalone_refining_entry_answers_alone_and_refines_an_earlier_line() -> None:
    enospc = "bash: test.txt: No space left on device"
    for text in (f"{DF_I}\n{ROW}", f"{enospc}\n{DF_I}\n{ROW}", f"{DF_I}\n{ROW}\n{enospc}"):
        found = engine.diagnose(text, catalog=INODES)
        assert (found.entry_id, found.category) == ("df-inodes-full", "inodes"), text
    healthy = f"{enospc}\n{DF_I}\n/dev/vda1  640K  12  628K  1% /"
    assert engine.diagnose(healthy, catalog=INODES).entry_id == "disk-full"
