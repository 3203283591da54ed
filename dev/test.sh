#!/usr/bin/env bash
# The test command (README, .ci/run): a virtualenv, the package with its test extras, then lint,
# types and the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# --no-compile: pip would byte-compile every installed package (~8 s); the modules the suite
# uses are compiled once, by the collection below, and the rest on first use.
.venv/bin/python -m pip install --quiet --no-compile -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
# The suite starts many Python processes (campaign, executors, hooks) and several pytest
# processes: with PYTHONDONTWRITEBYTECODE set (as on this machine's shells), each of them
# compiled the package from source again (0.35 s of CPU a start) and rewrote every test module.
unset PYTHONDONTWRITEBYTECODE
ruff check src tests bench dev
ruff format --check src tests bench dev
# mypy (~12 s of one core) runs beside the steps below; its verdict is awaited before the suite.
mypy_log="$(mktemp)"
mypy >"$mypy_log" 2>&1 &
mypy_pid=$!
# The import rules (pyproject.toml [tool.importlinter], docs/architecture.md "Import rules").
lint-imports
# The user guide (mkdocs.yml, docs/): built with --strict, so a link to a missing page fails;
# the built-in theme needs no network. The site goes to a scratch directory, removed after.
docs_site="$(mktemp -d)"
mkdocs build --strict --quiet --site-dir "$docs_site"
rm -rf "$docs_site"
# As root, the Debian packages of the test Slurm cluster (slurmctld, slurmd, slurmdbd, MariaDB,
# munge) up front; tests/runner/conftest.py starts the cluster for the session and stops it.
# Under CI=true the Slurm tests must run: the fixture fails instead of skipping.
if [ "$(id -u)" -eq 0 ]; then python3 dev/slurm_cluster.py install; fi
# As root, the Debian packages of the test Grid Engine cell (gridengine-master, -exec, -client);
# the gridengine_cell fixture (tests/conftest.py) starts a cell in its own directory on free
# ports for the session. Under CI=true the Grid Engine tests must run: the fixture fails instead.
if [ "$(id -u)" -eq 0 ]; then python3 dev/gridengine_cell.py install; fi
# As root, sshd, rsync and tmux for the ssh backend's tests: the ssh_boxes fixture
# (tests/sshboxes.py) starts two sshd on 127.0.0.1 with a user each; under CI=true they must run.
if [ "$(id -u)" -eq 0 ]; then python3 -c 'import sys; sys.path.insert(0, "."); from tests import sshboxes; sshboxes.install()'; fi
# For the whole suite, one collection first, beside mypy: it writes the bytecode of the
# package, of the tests (with pytest's assertion rewriting) and of the libraries they import.
# The suite's six pytest processes below then read it instead of each compiling it again (a
# cold collection costs ~9.5 s of CPU, a warm one ~4 s).
if [ "$#" -eq 0 ]; then
  collect_log="$(mktemp)"
  python -m pytest -p no:xdist --collect-only -q >"$collect_log" 2>&1 || {
    collect_code=$?
    cat "$collect_log"
    exit "$collect_code"
  }
  rm -f "$collect_log"
fi
mypy_code=0
wait "$mypy_pid" || mypy_code=$?
cat "$mypy_log"
rm -f "$mypy_log"
if [ "$mypy_code" -ne 0 ]; then exit "$mypy_code"; fi
# pytest exits 5 when it collected no test: that fails this script too, as it should.
# Arguments (a file, -k …) run just those tests, in this process.
if [ "$#" -gt 0 ]; then exec python -m pytest -p no:xdist "$@"; fi
# The suite in three parts, run side by side. The tests that wait on the Slurm cluster's own
# clocks (time limits, warning signals, job turnaround: marker `slurm`) spend most of their time
# waiting, not on the CPU: they run in one process in the background. So does the kill loop of
# tests/test_faults.py (marker `serial`: ~60 s of CPU in one process, its bounded wait sized for
# a loaded machine). Meanwhile the rest runs in parallel workers (pytest-xdist): those tests
# mostly wait on processes and real services, so more workers than cores pays (4 on this
# 2-core machine: part 1 took 462 s where 3 took 496 s, docs/benchmarks.md); `--dist
# loadgroup` keeps the ssh boxes' tests on one worker and the Grid Engine cell's on one
# (tests/conftest.py). The two background parts' output is kept for the end. Every part always
# runs to its end; any part failing fails the command.
# CAMPAIGNOPS_TEST_CPU=PATH records each test's CPU seconds in PATH.<worker> (tests/cpuclock.py;
# `python -m tests.cpuclock PATH.*` ranks them): docs/benchmarks.md, the suite's CPU.
part2_log="$(mktemp)"
part3_log="$(mktemp)"
python -m pytest -p no:xdist -m "slurm" >"$part2_log" 2>&1 &
part2=$!
python -m pytest -p no:xdist -m "serial and not slurm" >"$part3_log" 2>&1 &
part3=$!
part1_code=0
python -m pytest -n "${CAMPAIGNOPS_TEST_WORKERS:-4}" --dist loadgroup -m "not slurm and not serial" ||
  part1_code=$?
part2_code=0
wait "$part2" || part2_code=$?
echo "--- part 2, the Slurm tests (exit $part2_code):"
cat "$part2_log"
part3_code=0
wait "$part3" || part3_code=$?
echo "--- part 3, the kill loop (exit $part3_code):"
cat "$part3_log"
rm -f "$part2_log" "$part3_log"
if [ "$part1_code" -ne 0 ]; then exit "$part1_code"; fi
if [ "$part2_code" -ne 0 ]; then exit "$part2_code"; fi
exit "$part3_code"
