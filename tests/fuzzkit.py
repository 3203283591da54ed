"""Seeded mutation of a generated campaign's real files, and one CLI run per mutated input.

Shared by tests/test_fuzz_campaign.py (a CI-sized run) and bench/fuzz.py (a long run). The
campaign comes from `campaign new` and holds a real ledger (a completed and a failed smoke on
the local backend); each input mutates one or two of its files (bytes, or the parsed YAML/JSON
tree), runs one command in-process under a watchdog, and restores the tree. An input
*violates* the contract when the exit code is not 0, 1 or 2, an exception escapes
``cli.main``, a traceback is printed, ``--format json`` prints something that is not JSON,
the watchdog fires, or a command that failed changed the ledger's bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from campaignops import cli
from tests import jsoncontract, waiting
from tests.fuzzmutate import mutate

LEDGER = ".campaign/ledger.jsonl"
FAILING = """\
project: failing
backend: local
resources: {time: "00:05:00", cpus: 1, mem: 100M}
jobs:
  - id: boom
    cmd: python3 -c "import sys; sys.exit(3)"
    output: ${CAMPAIGN_OUT}/failing/boom.txt
"""

# (relative path, kind): the files a user (or a tool) edits, and the ledger the runner writes.
TARGETS: tuple[tuple[str, str], ...] = (
    ("campaign.yaml", "yaml"),
    ("manifests/example.yaml", "yaml"),
    ("manifests/example-queue.yaml", "yaml"),
    ("manifests/failing.yaml", "yaml"),
    ("queues/example.txt", "lines"),
    ("backends/local.md", "frontmatter"),
    ("backends/generic-slurm.md", "frontmatter"),
    ("failures.yaml", "yaml"),
    (LEDGER, "jsonl"),
    ("STATUS.md", "lines"),
)

# Commands (argv after `campaign`) and how many of each input budget's shares they get.
COMMANDS: dict[str, tuple[str, ...]] = {
    "check": ("check", "--today", "2026-11-21"),
    "check-json": ("check", "--format", "json", "--today", "2026-11-21"),
    # The same on the edited files alone (PATH arguments): the single-file mode a hook uses.
    "check-paths": ("check", "--today", "2026-11-21"),
    "check-paths-json": ("check", "--format", "json", "--today", "2026-11-21"),
    # production: smoke_first reads the ledger for the completed smoke.
    "submit-dry-run": ("submit", "manifests/example.yaml", "--stage", "production", "--dry-run"),
    "submit-dry-run-queue": (
        "submit",
        "manifests/example-queue.yaml",
        "--stage",
        "smoke",
        "--backend",
        "local",
        "--dry-run",
    ),
    "status": ("status",),
    "status-json": ("status", "--format", "json"),
    "status-markdown": ("status", "--format", "markdown"),
    "render": ("render",),
}

# --- the campaign -------------------------------------------------------------------------------


def _campaign(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "campaignops", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def build_campaign(parent: Path) -> Path:
    """`campaign new fuzz` (local and generic-slurm), then a completed and a failed smoke."""
    made = _campaign(
        parent,
        "new",
        "fuzz",
        "--defaults",
        "--data",
        "backends=generic-slurm,local",
        "--data",
        "smoke_backend=local",
        "--data",
        "require_pushed=no",
    )
    if made.returncode != 0:
        raise RuntimeError(f"campaign new failed: {made.stderr}")
    root = parent / "fuzz"
    (root / "manifests/failing.yaml").write_text(FAILING, encoding="utf-8")
    git = ["git", "-c", "user.name=Fuzz", "-c", "user.email=fuzz@example.org"]
    subprocess.run([*git, "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "failing"], cwd=root, check=True, capture_output=True)
    for manifest in ("manifests/example.yaml", "manifests/failing.yaml"):
        done = _campaign(root, "submit", manifest, "--stage", "smoke")
        if done.returncode != 0:
            raise RuntimeError(f"submit {manifest} failed: {done.stdout}{done.stderr}")

    def states() -> list[str]:
        return [json.loads(x).get("state") for x in (root / LEDGER).read_text().splitlines()]

    def finished() -> bool:
        refreshed = _campaign(root, "status", "--refresh")
        assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
        return states().count("COMPLETED") + states().count("FAILED") >= 2

    waiting.until(lambda: f"the smokes to finish: {states()}", finished, timeout=120)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "ledger"], cwd=root, check=True, capture_output=True)
    return root


@dataclass
class Pristine:
    """The campaign's files outside .git (symlinks not followed), and the stat each had when
    last written, so a restore reads only what a command may have touched."""

    files: dict[str, bytes]
    stats: dict[str, tuple[int, int]]

    def targets(self) -> list[tuple[str, str]]:
        """TARGETS plus the local backend's state files of the recorded jobs."""
        local = [
            (rel, "json")
            for rel in sorted(self.files)
            if rel.startswith(".campaign/local/") and rel.endswith((".json", ".pid"))
        ]
        return [t for t in TARGETS if t[0] in self.files] + local


def _stat(path: Path) -> tuple[int, int]:
    st = path.lstat()
    return st.st_size, st.st_mtime_ns


def snapshot(root: Path) -> Pristine:
    files: dict[str, bytes] = {}
    stats: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            if not path.is_symlink():
                rel = path.relative_to(root).as_posix()
                files[rel] = path.read_bytes()
                stats[rel] = _stat(path)
    return Pristine(files=files, stats=stats)


def restore(root: Path, pristine: Pristine) -> None:
    """Put the tree back: rewrite what changed, delete what is new, recreate what went. Paths
    as strings (2,000 restores a run: pathlib's objects were most of their cost)."""
    files, stats = pristine.files, pristine.stats
    base = str(root)
    cut = len(base) + 1
    seen: set[str] = set()
    dirs: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        if dirpath == base:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in list(dirnames):
            full = os.path.join(dirpath, name)  # noqa: PTH118
            if os.path.islink(full):  # noqa: PTH114
                dirnames.remove(name)
                filenames.append(name)
            else:
                dirs.append(full)
        for name in filenames:
            full = os.path.join(dirpath, name)  # noqa: PTH118
            rel = full[cut:]
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode) or rel not in files:
                os.unlink(full)  # noqa: PTH108
                continue
            seen.add(rel)
            if (st.st_size, st.st_mtime_ns) != stats[rel]:
                Path(full).write_bytes(files[rel])
                stats[rel] = _stat(Path(full))
    held = {rel[:i] for rel in files for i, c in enumerate(rel) if c == "/"}  # files' dirs
    for full in reversed(dirs):  # deepest first
        rel = full[cut:]
        if rel in files:  # a directory where a file was
            shutil.rmtree(full)
        elif rel not in held and not os.listdir(full):  # noqa: PTH208
            os.rmdir(full)  # noqa: PTH106
    for rel in files.keys() - seen:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
        stats[rel] = _stat(path)


# --- one input ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    number: int
    command: str
    edits: tuple[tuple[str, bytes | None], ...]  # (path, new bytes; None: a directory there)

    @property
    def argv(self) -> list[str]:
        paths = [rel for rel, _ in self.edits] if self.command.startswith("check-paths") else []
        return [*COMMANDS[self.command], *paths]

    def describe(self) -> str:
        parts = [
            f"{rel}: {'<a directory>' if data is None else repr(data[:300])}"
            for rel, data in self.edits
        ]
        return f"input {self.number}: campaign {' '.join(self.argv)}\n  " + "\n  ".join(parts)


def make_input(rng: random.Random, number: int, command: str, pristine: Pristine) -> Input:
    targets = pristine.targets()
    corpus = [pristine.files[rel] for rel, _ in targets]
    edits: list[tuple[str, bytes | None]] = []
    for rel, kind in rng.sample(targets, rng.choice((1, 1, 1, 2))):
        if rng.random() < 0.01:
            edits.append((rel, None))
        else:
            edits.append((rel, mutate(rng, pristine.files[rel], kind, corpus)))
    return Input(number=number, command=command, edits=tuple(edits))


class Hang(BaseException):
    """Raised by the watchdog; a BaseException so no `except Exception` swallows it."""


@dataclass(frozen=True)
class Outcome:
    code: int | None
    out: str
    err: str
    escaped: str  # the traceback of an exception that escaped cli.main, else ""
    seconds: float
    ledger_changed: bool


@dataclass
class Tally:
    inputs: int = 0
    seconds: float = 0.0
    codes: dict[str, dict[int | None, int]] = field(default_factory=dict)
    spent: dict[str, float] = field(default_factory=dict)  # seconds in each command
    failures: list[str] = field(default_factory=list)
    failed: list[Input] = field(default_factory=list)  # the inputs of ``failures``, in order

    def add(self, item: Input, outcome: Outcome, problems: list[str]) -> None:
        self.inputs += 1
        self.seconds += outcome.seconds
        by_code = self.codes.setdefault(item.command, {})
        by_code[outcome.code] = by_code.get(outcome.code, 0) + 1
        self.spent[item.command] = self.spent.get(item.command, 0.0) + outcome.seconds
        if problems:
            detail = outcome.escaped or outcome.err
            self.failed.append(item)
            self.failures.append(
                f"{item.describe()}\n  -> {'; '.join(problems)}\n  stderr/traceback: {detail}"
            )


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"no answer within the watchdog's bound (signal {signum})")


def run_input(root: Path, item: Input, *, bound_s: float) -> Outcome:
    """Write the input's files, run its command in-process (cwd = root), under a watchdog."""
    for rel, data in item.edits:
        path = root / rel
        if data is None:
            path.unlink(missing_ok=True)
            path.mkdir()
        else:
            path.write_bytes(data)
    before = (root / LEDGER).read_bytes() if (root / LEDGER).is_file() else None
    out_buf, err_buf = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_buf, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_buf, encoding="utf-8", write_through=True)
    escaped, code = "", None
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, bound_s)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(item.argv)
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # what escapes cli.main is exactly the contract's breach
        escaped = traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    seconds = time.perf_counter() - start
    after = (root / LEDGER).read_bytes() if (root / LEDGER).is_file() else None
    return Outcome(
        code=code,
        out=out_buf.getvalue().decode("utf-8", "replace"),
        err=err_buf.getvalue().decode("utf-8", "replace"),
        escaped=escaped,
        seconds=seconds,
        ledger_changed=before != after,
    )


def keep(item: Input, where: Path) -> Path:
    """Write an input's edited files under ``where``/input-N/ (the campaign's own bytes are
    not reproducible across runs: ledger ids and job ids differ), to replay it by hand."""
    dest = where / f"input-{item.number}"
    for rel, data in item.edits:
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(data)
    (dest / "COMMAND").write_text(" ".join(["campaign", *item.argv]) + "\n", encoding="utf-8")
    return dest


def problems(item: Input, outcome: Outcome) -> list[str]:
    """How the outcome breaks the contract (empty: it does not)."""
    found: list[str] = []
    if outcome.escaped:
        last = outcome.escaped.strip().splitlines()[-1]
        found.append(
            f"hang: {last}" if last.startswith("tests.fuzzkit.Hang") else f"escaped: {last}"
        )
    elif outcome.code not in (0, 1, 2):
        found.append(f"exit {outcome.code}")
    if "Traceback (most recent call last)" in outcome.out + outcome.err:
        found.append("a traceback was printed")
    if "json" in item.argv and not outcome.escaped:
        # One document on stdout, whatever happened, valid against the command's schema.
        try:
            jsoncontract.check(item.argv, outcome.out, outcome.code or 0)
        except AssertionError as exc:
            found.append(f"--format json broke the contract ({exc})")
    if outcome.code != 0 and outcome.ledger_changed:
        found.append("a failed command changed the ledger")
    return found


def campaign(
    root: Path,
    pristine: Pristine,
    *,
    seed: int,
    shares: dict[str, int],
    bound_s: float = 30.0,
    on_input: Callable[[Tally], None] | None = None,
) -> Tally:
    """Run ``shares[command]`` inputs per command, seeded, restoring the tree after each."""
    tally = Tally()
    rng = random.Random(seed)
    plan = [c for c, n in shares.items() for _ in range(n)]
    rng.shuffle(plan)
    cwd = Path.cwd()
    os.chdir(root)
    try:
        for number, command in enumerate(plan):
            item = make_input(rng, number, command, pristine)
            try:
                outcome = run_input(root, item, bound_s=bound_s)
            finally:
                restore(root, pristine)
            tally.add(item, outcome, problems(item, outcome))
            if on_input is not None:
                on_input(tally)
    finally:
        os.chdir(cwd)
    return tally
