"""Shared fixtures: a clean campaign copied to a temp dir, an in-process CLI runner, and the
real Slurm cluster (dev/slurm_cluster.py), one per session.

Tests that need the cluster take the ``slurm_cluster`` fixture and carry ``@pytest.mark.slurm``
(so ``-m "not slurm"`` leaves them out). As root the cluster is installed if need be and started
under a temp dir; otherwise those tests skip, except under CI=true, where they fail: CI must
run them.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from campaignops import cli
from tests import jsoncontract

# CPU seconds per test when CAMPAIGNOPS_TEST_CPU is set (tests/cpuclock.py, docs/benchmarks.md).
pytest_plugins = ["tests.cpuclock"]

FIXTURES = Path(__file__).parent / "fixtures"
# The date every test ages stamps against, so the suite does not rot with the calendar.
TODAY = dt.date(2026, 11, 21)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> dict[str, list[dict[str, object]]]:
        data: dict[str, list[dict[str, object]]] = json.loads(self.out)
        return data

    def ids(self) -> list[str]:
        return [str(f["id"]) for f in self.json()["findings"]]

    def where(self) -> list[tuple[str, int, str]]:
        """(path, line, id) of each finding, from JSON output."""
        return [
            (str(f["path"]), int(str(f["line"])), str(f["id"])) for f in self.json()["findings"]
        ]


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of tests/fixtures/clean, as the current directory."""
    root = tmp_path / "campaign"
    shutil.copytree(FIXTURES / "clean", root, symlinks=True)
    monkeypatch.chdir(root)
    return root


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``generated(NAME, *ANSWERS)``: the campaign a real ``campaign new NAME --defaults
    --data ANSWER…`` made, once per test run for each answer set (the generation is the same
    every time; the tests *of* generation run it themselves). Never change it: copy it with
    ``new_campaign``."""
    made: dict[tuple[str, ...], Path] = {}

    def generate(name: str, *answers: str) -> Path:
        key = (name, *answers)
        if key not in made:
            made[key] = _generate_once(tmp_path_factory, name, answers)
        return made[key]

    return generate


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The temp directory of this whole run: under pytest-xdist every worker's own base is a
    directory in it (popen-gw0, …), so what is made there can be made once for all workers."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(factory: pytest.TempPathFactory, key: str, make: Callable[[Path], None]) -> Path:
    """A directory of this run for ``key``, filled by ``make(directory)`` in the first process
    that asks (the others wait on its lock and find it made). Never change what is in it."""
    shared = run_root(factory)
    name = f"once-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    where, done = shared / name, shared / f"{name}.done"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(where, ignore_errors=True)  # a process that died half-way
            where.mkdir()
            make(where)
            done.touch()
    return where


def _generate_once(factory: pytest.TempPathFactory, name: str, answers: Sequence[str]) -> Path:
    def new(where: Path) -> None:
        data = [arg for answer in answers for arg in ("--data", answer)]
        proc = subprocess.run(
            [sys.executable, "-m", "campaignops", "new", name, "--defaults", *data],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr

    return made_once(factory, "\0".join(("campaign new", name, *answers)), new) / name


@pytest.fixture
def new_campaign(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Path]:
    """``new_campaign(NAME, *ANSWERS)``: this test's own copy (git history included) of the
    session's generated campaign, at ``tmp_path/NAME``, as the current directory."""

    def copy(name: str, *answers: str) -> Path:
        root = tmp_path / name
        shutil.copytree(generated(name, *answers), root, symlinks=True)
        monkeypatch.chdir(root)
        return root

    return copy


@pytest.fixture
def demo(new_campaign: Callable[..., Path]) -> Path:
    """A campaign from `campaign new demo --defaults` (require_pushed off), as the current
    directory: what a new user has after the README's first command."""
    return new_campaign("demo", "require_pushed=no")


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `campaign ARGS…` in-process; `check` gets --today pinned unless given."""

    def _run(*args: str) -> Result:
        argv: Sequence[str] = list(args)
        if argv and argv[0] == "check" and "--today" not in argv:
            argv = [*argv, "--today", TODAY.isoformat()]
        code = cli.main(argv)
        captured = capsys.readouterr()
        jsoncontract.check(argv, captured.out, code)  # every --format json run keeps the contract
        return Result(code=code, out=captured.out, err=captured.err)

    return _run


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` with a fixed identity; returns stdout."""
    proc = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.org",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return proc.stdout


@pytest.fixture
def repo(campaign: Path) -> Path:
    """The clean campaign as a git repository with one commit."""
    git(campaign, "init", "-q")
    git(campaign, "add", "-A")
    git(campaign, "commit", "-q", "-m", "initial campaign")
    return campaign


DEV = Path(__file__).resolve().parents[1] / "dev" / "slurm_cluster.py"
GRIDENGINE_DEV = DEV.with_name("gridengine_cell.py")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slurm: runs on the real single-node Slurm cluster")
    # `campaign new` commits the template into a per-user cache repository: one per test run,
    # never the user's own ~/.cache (subprocesses inherit it).
    os.environ.setdefault(
        "CAMPAIGNOPS_TEMPLATE_CACHE", tempfile.mkdtemp(prefix="campaignops-template-cache-")
    )
    config.addinivalue_line("markers", "ssh: runs against two real sshd on 127.0.0.1")
    config.addinivalue_line("markers", "gridengine: runs on the real single-node Grid Engine cell")
    config.addinivalue_line(
        "markers",
        "serial: a CPU-bound loop (the kill loop): dev/test.sh runs it in a process of its "
        "own beside the parallel part, not spread over the workers",
    )
    config.addinivalue_line(
        "markers",
        "late: runs after every other test of its process; it checks a job a session-scoped "
        "fixture started early (a Slurm time limit), which by then has run its course",
    )
    # Set by the hook below; registered here too so that `-p no:xdist` runs know it.
    config.addinivalue_line("markers", "xdist_group(name): the pytest-xdist worker group")


# Under pytest-xdist (`--dist loadgroup`, as dev/test.sh runs the suite) every test of one real
# service runs on one worker: that worker starts the service once, and no two workers make the
# same sshd users or fight over one cluster. Tests that start no service spread over the rest.
# The Slurm tests wait on the scheduler's own clocks (time limits, warning signals): dev/test.sh
# runs them in one process of their own beside the parallel part, and the `serial` ones in another.
SERVICE_GROUPS = {"slurm_cluster": "slurm", "ssh_boxes": "ssh", "gridengine_cell": "gridengine"}
MARKER_FIXTURES = {"slurm": "slurm_cluster", "ssh": "ssh_boxes", "gridengine": "gridengine_cell"}
# Modules whose module-scoped fixture is costly go to one worker each, which then builds it
# once, not once per worker that runs one of their tests: test_ci_runs' `world` (a campaign, a
# virtualenv and the workflow's pip install, ~17 s of CPU) and test_fuzz_campaign's campaign
# (`campaign new` and two smokes). xdist hands out the largest groups first, so the suite's
# longest test (2,000 fuzzed inputs, ~130 s of CPU) starts at once instead of late, where it
# was the run's tail.
MODULE_GROUPS = {
    "tests/template/test_ci_runs.py": "ci-runs",
    "tests/test_fuzz_campaign.py": "fuzz-campaign",
}


@pytest.hookimpl(wrapper=True)  # around xdist's own hook, which reads the groups off the items
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Iterator[None]:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for marker, fixture in MARKER_FIXTURES.items():
            if item.get_closest_marker(marker) is not None:
                names.add(fixture)
        groups = sorted({SERVICE_GROUPS[n] for n in names if n in SERVICE_GROUPS})
        if groups:  # a test that needs both services goes with Slurm's
            item.add_marker(pytest.mark.xdist_group(groups[0]))
        elif item.nodeid.split("::")[0] in MODULE_GROUPS:
            item.add_marker(pytest.mark.xdist_group(MODULE_GROUPS[item.nodeid.split("::")[0]]))
        # `-m slurm` / `-m ssh` select every test of the service, marked or not
        for group in groups:
            if item.get_closest_marker(group) is None:
                item.add_marker(getattr(pytest.mark, group))
    # Stable: the `late` tests keep their order, after all the others.
    items.sort(key=lambda item: item.get_closest_marker("late") is not None)
    yield


def _cluster_module(path: Path = DEV) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _unavailable(reason: str, *, what: str = "Slurm") -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: the {what} tests must run, but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[Any]:
    """A running cluster (``Cluster``: base, name, conf, cgroups); SLURM_CONF set meanwhile."""
    if os.geteuid() != 0:
        _unavailable("the Slurm cluster needs root (it starts munged, MariaDB and slurmd)")
    dev = _cluster_module()
    if dev.missing_binaries() and shutil.which("apt-get") is None:
        _unavailable(f"Slurm is not installed and there is no apt-get: {dev.missing_binaries()}")
    dev.install()
    # mkdtemp under /tmp: munged (user munge) must reach its socket through every parent.
    base = Path(tempfile.mkdtemp(prefix="campaignops-slurm-"))
    cluster = dev.start(base)
    saved = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        cluster.stop()
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def ssh_boxes() -> Iterator[Any]:
    """Two real sshd on 127.0.0.1, each with a user of its own (tests/sshboxes.py): the two
    rented boxes of the ssh backend's tests. Root only; skipped elsewhere, except under
    CI=true, where the ssh tests must run."""
    from tests import sshboxes

    if os.geteuid() != 0:
        _unavailable("the ssh boxes need root (useradd, sshd)", what="ssh")
    if sshboxes.missing() and shutil.which("apt-get") is None:
        _unavailable(f"openssh-server is not installed: {sshboxes.missing()}", what="ssh")
    sshboxes.install()
    base = Path(tempfile.mkdtemp(prefix="campaignops-ssh-"))
    made: list[Any] = []
    try:
        for name in ("box1", "box2"):
            made.append(sshboxes.make_box(name, base))
        yield tuple(made)
    finally:
        for box in made:
            sshboxes.remove_box(box)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def gridengine_cell() -> Iterator[Any]:
    """A running Grid Engine cell (dev/gridengine_cell.py ``Cell``: base, host, ports), its
    four client variables (SGE_ROOT, SGE_CELL, SGE_QMASTER_PORT, SGE_EXECD_PORT) set meanwhile.
    Root only; skipped elsewhere, except under CI=true, where the Grid Engine tests must run."""
    if os.geteuid() != 0:
        _unavailable("the Grid Engine cell needs root (it starts sge_qmaster and sge_execd)",
                     what="Grid Engine")  # fmt: skip
    dev = _cluster_module(GRIDENGINE_DEV)
    if dev.missing_binaries() and shutil.which("apt-get") is None:
        _unavailable(
            f"Grid Engine is not installed and there is no apt-get: {dev.missing_binaries()}",
            what="Grid Engine",
        )
    dev.install()
    # mkdtemp under /tmp: a job user's qsub reads SGE_ROOT through every parent.
    base = Path(tempfile.mkdtemp(prefix="campaignops-sge-"))
    cell = dev.start(base)
    saved = {k: os.environ.get(k) for k in cell.env}
    os.environ.update(cell.env)
    try:
        yield cell
    finally:
        cell.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(base, ignore_errors=True)
