"""Record what a backend's own submit and query answer, for tests/backends/test_contract.py.

    python -m tests.backends.record slurm    # with SLURM_CONF of dev/slurm_cluster.py exported
    python -m tests.backends.record local
    python -m tests.backends.record ssh      # as root: two real sshd boxes (tests/sshboxes.py)
    python -m tests.backends.record gridengine  # as root: a fresh cell of dev/gridengine_cell.py

Each run submits the same two jobs through the backend's own argvs, for real, in a temporary
checkout: one job of one task that exits 0, and an array of three tasks (at most two at a time)
whose task 1 exits 3. It writes, under tests/backends/recorded/<kind>/, byte for byte:

- ``submit-single.txt``, ``submit-array.txt``: what ``submit_argv`` printed;
- ``early-<i>.txt``: what each of ``query_argvs`` printed right after both submissions;
- ``finished-<i>.txt``: what they printed once every task had ended;
- ``cases.json``: the files, the page the checkout had, and what the two jobs are BY
  CONSTRUCTION (the single COMPLETED, the array FAILED by its task 1), never what a parser said.

Nothing is edited afterwards. A scheduler that cannot run here (PBS) is recorded from public
sources instead: its folder's cases.json names them (tests/runner/recorded/README.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from campaignops.backends import registry
from campaignops.backends.base import Backend
from campaignops.model.jobspec import BoxSettings, JobSpec, Resources
from campaignops.model.states import FINISHED
from tests import sshboxes

RECORDED = Path(__file__).parent / "recorded"
LEDGER_ID = "L20261127T200000Z-00000000000"
SINGLE = ("true",)
ARRAY = ("sleep 2", "sleep 2; exit 3", "sleep 2")
DEADLINE_S = 60.0
# The GPUs the local box executor finds: a replay of four idle P100s (recorded real nvidia-smi).
REPLAY = Path(__file__).parents[1] / "fakes" / "nvidia_smi_replay.py"
P100S = Path(__file__).parents[1] / "data" / "nvidia-smi" / "p100x4-idle.csv"
GRIDENGINE_DEV = Path(__file__).parents[2] / "dev" / "gridengine_cell.py"
Page = dict[str, Any]
Cases = dict[str, list[dict[str, Any]]]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


def checkout(base: Path, name: str, page: Page) -> tuple[Path, str]:
    """A committed checkout holding backends/<name>.md (front matter ``page``): its commit."""
    root = base / "contract"
    (root / "backends").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "logs/.keep").write_text("")
    (root / "backends" / f"{name}.md").write_text(f"---\n{json.dumps(page, indent=1)}\n---\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=r", "-c", "user.email=r@example.org", "commit", "-qm", "page")
    return root, _git(root, "rev-parse", "HEAD")


def spec(
    root: Path, commit: str, what: str, tasks: tuple[str, ...], n: int, box: BoxSettings
) -> JobSpec:
    return JobSpec(
        name=f"contract.{what}.smoke",
        workdir=str(root),
        tasks=tasks,
        resources=Resources(time="00:05:00"),
        max_parallel=2 if len(tasks) > 1 else None,
        comment=f"{LEDGER_ID}{n} {commit}",
        box=box,
    )


def run(argv: list[str], root: Path, answered: frozenset[int] = frozenset()) -> str:
    """What ``argv`` printed; an exit in ``answered`` (the backend's PARTIAL_ANSWER) is an answer."""
    done = subprocess.run(argv, capture_output=True, text=True, cwd=root, timeout=120)
    if done.returncode != 0 and done.returncode not in answered:
        raise SystemExit(f"{argv}: exit {done.returncode}: {done.stderr}")
    return done.stdout


def _finished(backend: Backend, outputs: list[str], ids: list[str]) -> bool:
    states = backend.parse_states(outputs)
    return all(
        i in states
        and states[i].state in FINISHED
        and all(t.state in FINISHED for t in states[i].tasks.values())
        for i in ids
    )


def record(kind: str, name: str, page: Page, *, prefix: str = "", box: BoxSettings) -> Cases:
    """Submit the two jobs, query them, write the outputs; what the case file says of them."""
    out = RECORDED / kind
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="contract-record-") as tmp:
        root, commit = checkout(Path(tmp), name, page)
        backend = next(k for k in registry.KINDS if k.name == kind).make(root, name)
        ids, submits = [], []
        for n, (what, tasks) in enumerate((("single", SINGLE), ("array", ARRAY)), start=1):
            script = root / f"{what}.sh"
            script.write_text(backend.render(spec(root, commit, what, tasks, n, box)))
            stdout = run(backend.submit_argv(str(script)), root)
            (out / f"{prefix}submit-{what}.txt").write_text(stdout)
            ids.append(backend.parse_job_id(stdout))
            submits.append({"file": f"{prefix}submit-{what}.txt", "job_id": ids[-1]})
        answered = backend.PARTIAL_ANSWER
        early = [run(a, root, answered) for a in backend.query_argvs(ids)]
        deadline = time.monotonic() + DEADLINE_S
        while True:
            final = [run(a, root, answered) for a in backend.query_argvs(ids)]
            if _finished(backend, final, ids) or time.monotonic() > deadline:
                break
            time.sleep(1)
    for when, outputs in (("early", early), ("finished", final)):
        for i, text in enumerate(outputs):
            (out / f"{prefix}{when}-{i}.txt").write_text(text)
    single, array = ids
    return {
        "submits": submits,
        "queries": [
            {
                "outputs": [f"{prefix}early-{i}.txt" for i in range(len(early))],
                "jobs": {single: {"state": None}, array: {"state": None}},
            },
            {
                "outputs": [f"{prefix}finished-{i}.txt" for i in range(len(final))],
                "jobs": {
                    single: {"state": "COMPLETED"},
                    array: {
                        "state": "FAILED",
                        "tasks": {"0": "COMPLETED", "1": "FAILED", "2": "COMPLETED"},
                    },
                },
            },
        ],
    }


def write_cases(kind: str, page: Page, *recorded: Cases) -> None:
    cases = {
        "source": f"recorded 2026-11-27 by python -m tests.backends.record {kind}: see ../README.md",
        "page": page,
        "submits": [s for r in recorded for s in r["submits"]],
        "queries": [q for r in recorded for q in r["queries"]],
    }
    (RECORDED / kind / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")


PAGE = {"platform": "contract", "verified": "2026-11"}


def slurm() -> None:
    if "SLURM_CONF" not in os.environ:
        raise SystemExit("export the SLURM_CONF that python dev/slurm_cluster.py up printed")
    page = {**PAGE, "platform": "generic-slurm", "kind": "slurm", "scheduler": "slurm"}
    write_cases("slurm", page, record("slurm", "generic-slurm", page, box=BoxSettings()))


def local() -> None:
    page = {**PAGE, "platform": "local", "kind": "local", "scheduler": "none"}
    cpu = record("local", "local", page, box=BoxSettings())
    # A job with a GPU list runs under the box executor, whose answers read differently.
    with tempfile.TemporaryDirectory(prefix="contract-bin-") as bindir:
        (Path(bindir) / "nvidia-smi").symlink_to(REPLAY)
        os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"
        os.environ["NVSMI_REPLAY"] = str(P100S)
        gpu = record("local", "local", page, prefix="gpu-", box=BoxSettings(gpus=(0, 1)))
    write_cases("local", page, cpu, gpu)


@contextmanager
def boxes() -> Iterator[list[Any]]:
    sshboxes.install()
    base = Path(tempfile.mkdtemp(prefix="contract-boxes-"))
    made: list[Any] = []
    try:
        for name in ("box1", "box2"):
            made.append(sshboxes.make_box(name, base))
        yield made
    finally:
        for box in made:
            for d in box.workdir.glob(".campaignops/jobs/*/"):
                (d / "cancel").touch()
            sshboxes.remove_box(box)
        shutil.rmtree(base, ignore_errors=True)


def ssh() -> None:
    with boxes() as made:
        page = {**PAGE, "platform": "generic-ssh", "kind": "ssh", "scheduler": "none"}
        page["instances"] = [b.instance() for b in made]
        # The page the contract test gives its checkout: the same boxes, named, never reached.
        kept = [{k: v for k, v in i.items() if k != "identity"} for i in page["instances"]]
        shown = {**page, "instances": kept}
        write_cases("ssh", shown, record("ssh", "generic-ssh", page, box=BoxSettings()))


# The test cell's earlier recordings (tests/runner/recorded/README.md), named by relative path,
# not copied: two more qsub answers, and the backend's own two queries (qstat -s prsz, qacct -o)
# once a held array (job 1) and a held job (3) were deleted while they waited and job 2 ran true.
EARLIER = "../../../runner/recorded/gridengine_"
GRIDENGINE_EARLIER: Cases = {
    "submits": [
        {"file": f"{EARLIER}qsub_terse_array.txt", "job_id": "1"},
        {"file": f"{EARLIER}qsub_terse_single.txt", "job_id": "6"},
    ],
    "queries": [
        {
            "outputs": [
                f"{EARLIER}qstat_u_xml_s_prsz_zombies.xml",
                f"{EARLIER}qacct_o_j_zombies.txt",
            ],
            "jobs": {
                "1": {
                    "state": "CANCELLED",
                    "tasks": {"0": "CANCELLED", "1": "CANCELLED", "2": "CANCELLED"},
                },
                "2": {"state": "COMPLETED"},
                "3": {"state": "CANCELLED"},
            },
        }
    ],
}


def cluster_module(path: Path) -> ModuleType:
    """A dev/ script (not a package) loaded as a module, as tests/conftest.py loads it."""
    loaded = importlib.util.spec_from_file_location(path.stem, path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules[loaded.name] = module  # dataclasses look their module up while the class is made
    loaded.loader.exec_module(module)
    return module


def gridengine() -> None:
    """A fresh cell, so that the early qacct is the cell's own "no jobs yet" answer (exit 1)."""
    dev = cluster_module(GRIDENGINE_DEV)
    dev.install()
    # mkdtemp under /tmp: a job user's qsub reads SGE_ROOT through every parent.
    base = Path(tempfile.mkdtemp(prefix="contract-sge-"))
    cell = dev.start(base)
    os.environ.update(cell.env)
    try:
        page = {
            **PAGE,
            "platform": "generic-gridengine",
            "kind": "gridengine",
            "scheduler": "gridengine",
        }
        new = record("gridengine", "generic-gridengine", page, box=BoxSettings())
        write_cases("gridengine", page, new, GRIDENGINE_EARLIER)
    finally:
        cell.stop()
        shutil.rmtree(base, ignore_errors=True)


KINDS: Mapping[str, Callable[[], None]] = {
    "slurm": slurm,
    "local": local,
    "ssh": ssh,
    "gridengine": gridengine,
}

if __name__ == "__main__":
    for arg in sys.argv[1:] or list(KINDS):
        KINDS[arg]()
