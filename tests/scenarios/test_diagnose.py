"""Learning from a failed smoke: the diagnosis in status and STATUS.md, `campaign diagnose`,
the breaker counting one config's same-diagnosis failures, and the fix that resets it.

Runs on the local backend and on the real Slurm cluster.
"""

from __future__ import annotations

import json
import shlex

from tests.scenarios.conftest import Life

TRAIN = """\
import pathlib, sys
config = dict(line.split(": ") for line in pathlib.Path(sys.argv[1]).read_text().splitlines())
if int(config["batch"]) > 64:
    print("epoch 0:   3%|#   | 1/30", file=sys.stderr)
    print("Traceback (most recent call last):", file=sys.stderr)
    print('  File "train.py", line 41, in step', file=sys.stderr)
    print(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 15.77 GiB of which 1.02 GiB is free.",
        file=sys.stderr,
    )
    sys.exit(1)
out = pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
(out / "done.txt").write_text("ok\\n")
"""

MANIFEST = """\
resources: {time: "00:05:00", mem: 200M}
jobs:
  - id: train
    cmd: python3 scripts/train.py configs/train.yaml ${CAMPAIGN_OUT}/train
    output: "${CAMPAIGN_OUT}/train/done.txt"
"""


def _smoke(life: Life) -> str:
    done = life.submit("manifests/train.yaml", "smoke")
    assert done.code == 0, done.err
    job = life.wait()
    assert job.job_id is not None
    return job.job_id


def test_a_gpu_oom_is_diagnosed_trips_the_breaker_and_a_fix_resets_it(life: Life) -> None:
    life.write("scripts/train.py", TRAIN, commit=False)
    life.write("configs/train.yaml", "batch: 512\n", commit=False)
    life.write("manifests/train.yaml", MANIFEST)

    first = _smoke(life)
    job = life.jobs()[-1]
    task = job.task("train")
    assert task is not None
    assert (task.state, task.exit_code, task.category, task.entry) == (
        "FAILED",
        1,
        "oom-gpu",
        "cuda-oom",
    )
    assert job.text("signature") == "cuda-oom"
    shown = life.run("status")
    assert shown.code == 0 and "oom-gpu (cuda-oom)" in shown.out
    status_md = (life.root / "STATUS.md").read_text()
    assert "| train | FAILED exit 1, oom-gpu (cuda-oom) (" in status_md

    told = life.run("diagnose", first, "--today", "2026-11-21")
    assert told.code == 0, told.err
    # The target names the same task without its job id (the user guide's way).
    by_target = life.run(
        "diagnose", "--target", "train", "--stage", "smoke", "--today", "2026-11-21"
    )
    assert by_target.code == 0 and by_target.out == told.out, by_target.err
    for wrong in (("--target", "nope"), ("--target", "train", "--stage", "production")):
        refused = life.run("diagnose", *wrong)
        assert refused.code == 2 and "no submitted job in the ledger ran target" in refused.err
    assert life.run("diagnose", first, "--stage", "smoke").code == 2  # --stage needs --target
    assert "entry     cuda-oom (oom-gpu)" in told.out
    assert "fix       " in told.out and "micro-batch" in told.out
    assert "retry     after-fix" in told.out
    assert (
        "campaign lesson add 'PyTorch could not allocate GPU memory (CUDA, or HIP on ROCm builds)'"
        in told.out
    )
    as_json = json.loads(
        life.run("diagnose", first, "--format", "json", "--today", "2026-11-21").out
    )
    assert (as_json["category"], as_json["entry"]) == ("oom-gpu", "cuda-oom")
    assert as_json["matches"][0]["text"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert as_json["lesson"].startswith(
        f"- 2026-11-21 · PyTorch could not allocate GPU memory (CUDA, or HIP on ROCm builds) (job {first})"
    )
    assert as_json["lesson"].endswith(" · cuda-oom")
    # The offered command appends exactly that line, and the LESSON checks accept it.
    argv = shlex.split(as_json["lesson_command"])
    assert argv[:3] == ["campaign", "lesson", "add"]
    added = life.run(*argv[1:], "--today", "2026-11-21")
    assert added.code == 0, added.err
    assert (life.root / "LESSONS.md").read_text().splitlines()[-1] == as_json["lesson"]
    assert life.run("check", "--select", "LESSON").code == 0
    assert as_json["verdict"] == {"state": "FAILED", "exit_code": 1, "reason": None}

    # The same config fails twice more: the fourth try is refused, naming the three jobs and
    # the catalog's fix.
    life.commit("smoke 1")
    second, third = _smoke(life), _smoke(life)
    life.commit("smokes 2 and 3")
    refused = life.submit("manifests/train.yaml", "smoke")
    assert refused.code == 1
    assert "breaker" in refused.err and "cuda-oom" in refused.err
    # The three jobs, in submission order (the last two may share a second: either order).
    named = {f"jobs {first}, {a}, {b}" for a, b in ((second, third), (third, second))}
    assert second != third and any(n in refused.err for n in named), refused.err
    assert "the catalog's fix for cuda-oom" in refused.err

    # The fix is a new config: a new fingerprint starts a new count, and the smoke passes.
    life.write("configs/train.yaml", "batch: 32\n")
    _smoke(life)
    fixed = life.jobs()[-1]
    assert (fixed.state, fixed.exit_code) == ("COMPLETED", 0)


def test_an_error_the_catalog_does_not_know_is_unknown_and_signed_by_its_line(life: Life) -> None:
    life.write(
        "scripts/train.py",
        "import sys\nsys.exit('ValueError: shape (3, 4) vs (4, 5)')\n",
        commit=False,
    )
    life.write("configs/train.yaml", "batch: 1\n", commit=False)
    life.write("manifests/train.yaml", MANIFEST)
    job_id = _smoke(life)
    task = life.jobs()[-1].task("train")
    assert task is not None and (task.category, task.entry) == (None, None)
    assert task.signature == "FAILED:1 ValueError: shape (<n>, <n>) vs (<n>, <n>)"
    told = json.loads(life.run("diagnose", job_id, "--format", "json").out)
    assert (told["category"], told["entry"], told["matches"]) == (None, None, [])
    # Where the campaign's own entry goes: its own catalog, never the template-owned one.
    assert "add an entry to failures.local.yaml" in life.run("diagnose", job_id).out
    assert told["lesson"].endswith(" · new")
    # The lesson names the error as printed, not its masked signature.
    assert told["last_error"]["text"] == "ValueError: shape (3, 4) vs (4, 5)"
    assert "unexplained failure: ValueError: shape (3, 4) vs (4, 5) (job " in told["lesson"]
    assert "| train | FAILED exit 1, unknown (" in (life.root / "STATUS.md").read_text()


def test_a_completed_task_is_no_failure_and_offers_no_lesson(life: Life) -> None:
    life.write("scripts/train.py", TRAIN, commit=False)
    life.write("configs/train.yaml", "batch: 32\n", commit=False)
    life.write("manifests/train.yaml", MANIFEST)
    job_id = _smoke(life)
    assert (life.jobs()[-1].state, life.jobs()[-1].exit_code) == ("COMPLETED", 0)
    told = life.run("diagnose", job_id)
    assert told.code == 0, told.err
    assert "the task completed (exit 0), so there is no failure to diagnose" in told.out
    assert "unknown" not in told.out and "lesson add" not in told.out
    shown = json.loads(life.run("diagnose", job_id, "--format", "json").out)
    assert (shown["completed"], shown["lesson"], shown["lesson_command"]) == (True, None, None)
