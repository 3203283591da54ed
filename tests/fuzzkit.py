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
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from campaignops import cli

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

# Values that have broken parsers before: sizes past every limit, odd numbers, path tricks,
# line separators, shell and template syntax, deep nesting below libyaml's own stack limit.
LONG_NAME = "n" * 300  # one path component over NAME_MAX (255 bytes)
VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    2**63,
    -(2**63) - 1,
    10**400,
    1e308,
    math.inf,
    -math.inf,
    math.nan,
    "",
    " ",
    LONG_NAME,
    f"queues/{LONG_NAME}.txt",
    "../README",
    "../../../../etc/passwd",
    "/etc/passwd",
    "x\ny",
    "a\u2028b",
    "a\x85b",
    "\x00",
    "\ufeff",
    "\ud800",
    "${a}",
    "${",
    "%C",
    "$(touch pwned)",
    "; touch pwned; echo",
    "00:00:00",
    "99:99:99",
    "1-00:00:00",
    "-00:01:00",
    "2026-13-45",
    "2026-02-30T25:61:61Z",
    "*",
    "**/*",
    "~",
    "é🙂ﬀ",
    "\\",
    "'\"",
    "\t",
    "local",
    "generic-slurm",
    "smoke",
    "production",
    "COMPLETED",
    "FAILED",
    "local-1-000000",
    [],
    {},
    [None],
    {"": None},
    {"x-": 1},
)
KEYS: tuple[str, ...] = (
    "jobs",
    "grid",
    "template",
    "phases",
    "backend",
    "backends",
    "project",
    "smoke",
    "resources",
    "queue",
    "default_cmd",
    "id",
    "cmd",
    "args",
    "output",
    "kind",
    "state",
    "job_id",
    "ledger_id",
    "targets",
    "run_time_s",
    "time",
    "paths",
    "budgets",
    "stages",
    "patterns",
    "charging",
    "x-junk",
    "",
)
TOKENS: tuple[bytes, ...] = (
    b"\x00",
    b"\xff",
    b"\xed\xa0\x80",  # a UTF-8-encoded lone surrogate
    b"\xef\xbb\xbf",
    b"\r",
    b"\r\n",
    b"\xe2\x80\xa8",
    b"\xc2\x85",
    b"\t",
    b"---\n",
    b"...\n",
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b"!!python/object:os.system ",
    b"!!binary ",
    b"!!timestamp ",
    b"%YAML 1.1\n",
    b"? ",
    b": ",
    b"- ",
    b"{",
    b"}",
    b"[",
    b"]",
    b"'",
    b'"',
    b"#",
    b"<!-- campaign:begin jobs -->",
    b"<!-- campaign:end jobs -->",
    b"1e999",
    b"-1e999",
    b"NaN",
    b"Infinity",
    b'"\\ud800"',
    LONG_NAME.encode(),
    b"../",
    b"[" * 2000 + b"]" * 2000,
    b"{a: " * 100 + b"1" + b"}" * 100,
)


# --- mutation -----------------------------------------------------------------------------------


def _bytes_op(rng: random.Random, data: bytes, corpus: Sequence[bytes]) -> bytes:
    n = len(data)
    at = rng.randint(0, n)
    end = min(n, at + rng.choice((1, 2, 8, 64, 512)))
    op = rng.randrange(10)
    if op == 0 and n:
        i = rng.randrange(n)
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if op == 1:
        return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]
    if op == 2:
        return data[:at] + data[end:]
    if op == 3:
        return data[:end] + data[at:end] * rng.randint(1, 50) + data[end:]
    if op == 4:
        return data[:at]
    if op == 5:
        other = rng.choice(corpus)
        i = rng.randint(0, len(other))
        return data[:at] + other[i : i + rng.randint(1, 400)] + data[end:]
    if op == 6:
        return data.replace(b"\n", b"\r\n") if rng.random() < 0.5 else data.replace(b"\n", b"\r")
    if op == 7:
        return b""
    if op == 8 and n:  # swap two lines
        lines = data.split(b"\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    return data[:at] + rng.choice(TOKENS) + data[at:]


def _nodes(tree: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from _nodes(v, (*path, i))


def _value(rng: random.Random) -> Any:
    value = rng.choice(VALUES)
    if rng.random() < 0.1:
        depth = rng.choice((10, 63, 64, 65, 200))
        for _ in range(depth):
            value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def _tree_op(rng: random.Random, tree: Any) -> Any:
    """One edit of a parsed document: replace, delete, add, duplicate or wrap a node."""
    paths = list(_nodes(tree))
    path = rng.choice(paths)
    if not path:
        return _value(rng) if rng.random() < 0.2 else _tree_op_in(rng, tree)
    parent: Any = tree
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    op = rng.randrange(5)
    if op == 0:
        parent[last] = _value(rng)
    elif op == 1:
        del parent[last]
    elif op == 2:
        parent[last] = [parent[last]]
    elif op == 3 and isinstance(parent, list):
        parent.insert(last, json.loads(json.dumps(parent[last], default=str)))
    elif op == 3:
        parent[rng.choice(KEYS)] = parent[last]
    else:
        _tree_op_in(rng, parent[last])
    return tree


def _tree_op_in(rng: random.Random, node: Any) -> Any:
    if isinstance(node, dict):
        node[rng.choice(KEYS)] = _value(rng)
    elif isinstance(node, list):
        node.append(_value(rng))
    return node


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # a safe loader: the C one when it is built


def _dump_yaml(tree: Any) -> bytes:
    try:
        text = yaml.dump(tree, Dumper=_DUMPER, allow_unicode=True, sort_keys=False)
    except Exception:  # a lone surrogate: the emitter escapes what it cannot write as UTF-8
        text = yaml.dump(tree, Dumper=yaml.SafeDumper, allow_unicode=False, sort_keys=False)
    return text.encode("utf-8", "surrogatepass")


def _structure_op(rng: random.Random, data: bytes, kind: str) -> bytes:
    text = data.decode("utf-8", "surrogateescape")
    try:
        if kind == "yaml":
            return _dump_yaml(_tree_op(rng, _load_yaml(text)))
        if kind == "frontmatter":
            _, head, body = text.split("---\n", 2)
            new = _dump_yaml(_tree_op(rng, _load_yaml(head))).decode("utf-8", "surrogatepass")
            return f"---\n{new}---\n{body}".encode("utf-8", "surrogatepass")
        if kind == "json":
            return json.dumps(_tree_op(rng, json.loads(text)), default=str).encode(
                "utf-8", "surrogatepass"
            )
        if kind == "jsonl":
            lines = text.splitlines()
            i = rng.randrange(len(lines))
            if rng.random() < 0.3:  # drop, duplicate or move a whole record
                record = lines.pop(i)
                if rng.random() < 0.7:
                    lines.insert(rng.randint(0, len(lines)), record)
                    if rng.random() < 0.5:
                        lines.insert(rng.randint(0, len(lines)), record)
            else:
                lines[i] = json.dumps(_tree_op(rng, json.loads(lines[i])), default=str)
            return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    except Exception:  # the harness's own parse: anything unparsable falls back to bytes
        pass  # an earlier mutation left nothing to parse: fall back to bytes
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    fields = lines[i].split(" ")
    fields.insert(rng.randint(0, len(fields)), str(_value(rng)))
    lines[i] = " ".join(fields)
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def mutate(rng: random.Random, data: bytes, kind: str, corpus: Sequence[bytes]) -> bytes:
    """One to three stacked edits of ``data``: bytes or, about half the time, structure."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if rng.random() < 0.5:
            data = _structure_op(rng, data, kind)
        else:
            data = _bytes_op(rng, data, corpus)
    return data


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
    deadline = time.monotonic() + 120
    while _campaign(root, "status", "--refresh").returncode == 0:
        states = [json.loads(x).get("state") for x in (root / LEDGER).read_text().splitlines()]
        if states.count("COMPLETED") + states.count("FAILED") >= 2:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the smokes did not finish: {states}")
        time.sleep(0.5)
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
    """Put the tree back: rewrite what changed, delete what is new, recreate what went."""
    files, stats = pristine.files, pristine.stats
    seen: set[str] = set()
    dirs: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in list(dirnames):
            if Path(dirpath, name).is_symlink():
                dirnames.remove(name)
                filenames.append(name)
            else:
                dirs.append(Path(dirpath, name))
        for name in filenames:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() or rel not in files:
                path.unlink()
                continue
            seen.add(rel)
            if _stat(path) != stats[rel]:
                path.write_bytes(files[rel])
                stats[rel] = _stat(path)
    for path in reversed(dirs):  # deepest first
        rel = path.relative_to(root).as_posix()
        if rel in files:  # a directory where a file was
            shutil.rmtree(path)
        elif not any(path.iterdir()) and not any(p.startswith(rel + "/") for p in files):
            path.rmdir()
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

    def add(self, item: Input, outcome: Outcome, problems: list[str]) -> None:
        self.inputs += 1
        self.seconds += outcome.seconds
        by_code = self.codes.setdefault(item.command, {})
        by_code[outcome.code] = by_code.get(outcome.code, 0) + 1
        self.spent[item.command] = self.spent.get(item.command, 0.0) + outcome.seconds
        if problems:
            detail = outcome.escaped or outcome.err
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
    if (
        "json" in item.argv
        and not outcome.escaped
        and (outcome.code in (0, 1) or outcome.out.strip())
    ):
        try:
            json.loads(outcome.out)
        except ValueError as exc:
            found.append(f"--format json printed no JSON ({exc})")
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
